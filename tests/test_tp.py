"""Tensor parallelism (minisgl/distributed): greedy tokens with 2, 3 and 4 ranks (gloo, one process per rank) equal
one rank's and transformers', K/V heads split and replicated, with emulated CUDA graphs too; sizes that do not
divide are refused with the numbers; a rank that dies ends the others and says which."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from minisgl.core import SamplingParams
from minisgl.distributed.ranks import RankDiedError
from minisgl.llm import LLM
from minisgl.testing import hf_greedy_with_margins, smollm2_path, tiny_model, tiny_model_one_kv_head
from tests.support import assert_greedy_equal

N = 10  # tokens per prompt
PROMPTS = [[1, 2, 3, 4, 5], [7, 8], [9] * 12, [3, 1, 4, 1, 5, 9, 2, 6], [42], [100, 5, 77, 3, 250, 18, 6]]
# as the engine runs: radix cache, chunked prefill of 8 tokens (the 12-token prompt takes two steps), page size 4
ENGINE = dict(page_size=4, chunked_prefill_size=8, linear_backend="default", max_seq_len_override=128)


@pytest.fixture(scope="module")
def models():
    return {"llama, 2 K/V heads": tiny_model("llama"), "qwen3, 4 K/V heads": tiny_model("qwen3", gqa=False),
            "llama, 1 K/V head": tiny_model_one_kv_head("llama")}


def _prompts(path: Path) -> list[list[int]]:
    """PROMPTS, and one of the ids at every rank's vocabulary edges (the first and last row of each slice)."""
    vocab = json.loads((path / "config.json").read_text())["vocab_size"]
    edges = sorted({i * vocab // 4 + d for i in range(4) for d in (-1, 0)} - {-1} | {vocab - 1})
    return PROMPTS + [edges]


def _generate(path: Path, tp: int, graphs: bool, prompts=PROMPTS, n=N, **kw) -> tuple[list[list[int]], int]:
    llm = LLM(path, tp_size=tp, cuda_graph_max_bs=4 if graphs else None, **{**ENGINE, **kw})
    replays: list[int] = []
    runner = llm.engine.graph_runner
    replay = runner.replay
    runner.replay = lambda b: (replays.append(b.padded_size), replay(b))[1]
    try:
        # different lengths: the batch shrinks as requests finish, so small decode batches replay graphs
        params = [SamplingParams(max_tokens=n - (i % 3) * 2, ignore_eos=True) for i in range(len(prompts))]
        out = [o["token_ids"] for o in llm.generate(prompts, params)]
    finally:
        llm.shutdown()
    return out, len(replays)


def test_tp_2_and_4_equal_one_rank_and_transformers(models):
    ties = tokens = 0
    for name, path in models.items():
        prompts = _prompts(path)
        hf, margins = hf_greedy_with_margins(path, prompts, N)
        want = [h[: N - (i % 3) * 2] for i, h in enumerate(hf)]
        one, _ = _generate(path, 1, False, prompts)
        ties += assert_greedy_equal(one, want, margins, f"{name}, tp 1")
        for tp in (2, 4):
            for graphs in (False, True):
                got, replayed = _generate(path, tp, graphs, prompts)
                what = f"{name}, tp {tp}{', emulated graphs' if graphs else ''}"
                ties += assert_greedy_equal(got, want, margins, what)
                tokens += sum(map(len, got))
                if graphs:
                    assert replayed > 0, f"{what}: no decode step replayed a graph"
    assert ties * 200 < tokens, f"{ties} near-ties in {tokens} tokens"


def test_tp_3_on_smollm2_equals_transformers():
    path = smollm2_path()
    prompts = [[1, 504, 3458, 282, 4649, 314], [28, 2682, 28, 260, 9371, 30, 378, 441], [9690, 198, 1035, 744]]
    hf, margins = hf_greedy_with_margins(path, prompts, 8)
    got, _ = _generate(path, 3, False, prompts, 8)
    want = [h[: 8 - (i % 3) * 2] for i, h in enumerate(hf)]
    assert assert_greedy_equal(got, want, margins, "SmolLM2, tp 3") == 0


@pytest.mark.parametrize("path, tp, said", [
    ("smollm2", 2, ["2", "9", "attention heads"]),
    ("llama", 3, ["3", "attention heads, 4"]),
    ("qwen3-mha", 8, ["8", "attention heads, 4"]),
    ("llama", 0, ["positive integer"]),
])
def test_a_size_that_does_not_divide_is_refused_before_any_rank_starts(path, tp, said):
    folder = {"smollm2": smollm2_path, "llama": lambda: tiny_model("llama"),
              "qwen3-mha": lambda: tiny_model("qwen3", gqa=False)}[path]()
    before = _children()
    with pytest.raises(ValueError) as e:
        LLM(folder, tp_size=tp, **ENGINE)
    for word in said:
        assert word in str(e.value), str(e.value)
    assert _children() == before, "no rank process was started"


def test_kv_heads_that_neither_divide_nor_are_divided_are_refused(tmp_path):
    from minisgl.distributed import check_tp_size
    from minisgl.models import ModelConfig

    config = json.loads((tiny_model("llama") / "config.json").read_text())
    for key, value in {"num_attention_heads": 12, "num_key_value_heads": 3, "intermediate_size": 144,
                       "hidden_size": 96, "vocab_size": 516}.items():
        config[key] = value
    (tmp_path / "config.json").write_text(json.dumps(config))
    c = ModelConfig.from_path(tmp_path)
    check_tp_size(c, 6)  # 6 = 2 x 3: each K/V head on two ranks
    with pytest.raises(ValueError, match="neither a divisor nor a multiple of the model's 3 K/V heads"):
        check_tp_size(c, 4)
    with pytest.raises(ValueError, match="does not divide the model's 3 K/V heads"):
        check_tp_size(c, 2)


def _children() -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out |= {int(c) for c in (task / "children").read_text().split()}
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return out


def test_a_rank_that_dies_ends_the_others_and_is_named():
    llm = LLM(tiny_model("llama"), tp_size=4, **ENGINE)
    ranks = llm._ranks
    assert ranks is not None
    pids = [p.pid for p in ranks._procs]
    victim = pids[1]  # rank 2
    long = [SamplingParams(max_tokens=100, ignore_eos=True)] * 4
    threading.Timer(0.3, os.kill, (victim, signal.SIGKILL)).start()
    t0 = time.monotonic()
    with pytest.raises(RankDiedError, match=rf"rank 2 \(pid {victim}\) died \(exit code -9\)"):
        for _ in range(50):  # long enough that the kill lands inside a step
            llm.generate([[1, 2, 3]] * 4, long)
    assert time.monotonic() - t0 < 60
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2], \
            f"rank process {pid} is still running"
    with pytest.raises(RuntimeError, match="shut down"):
        llm.generate([[1, 2]])


def test_rank_threads_run_this_process_code(models, monkeypatch):
    """Ranks as threads exchanging in memory (minisgl/distributed/threads.py, how the judge runs a learner's TP code
    on every rank): transformers' tokens; and a change to the engine made in this process reaches every rank."""
    from minisgl.distributed.threads import generate_in_rank_threads
    from minisgl.layers import VocabEmbedding

    path = models["llama, 1 K/V head"]
    prompts = _prompts(path)
    params = [SamplingParams(max_tokens=N, ignore_eos=True)] * len(prompts)
    engine = dict(page_size=4, chunked_prefill_size=8, linear_backend="default", max_seq_len_override=128)
    hf, margins = hf_greedy_with_margins(path, prompts, N)
    for tp in (2, 4):
        got = generate_in_rank_threads(tp, path, prompts, params, **engine)
        assert assert_greedy_equal(got, hf, margins, f"rank threads, tp {tp}") == 0
    shard = VocabEmbedding._forward_shard
    monkeypatch.setattr(VocabEmbedding, "_forward_shard", lambda self, ids: shard(self, ids) * 0.5)
    assert generate_in_rank_threads(2, path, prompts, params, **engine) != hf


def test_a_rank_thread_that_fails_fails_the_call():
    from minisgl.distributed.threads import run_rank_threads

    def fn(rank):
        if rank == 1:
            raise ValueError("rank 1 gave up")
        return rank

    with pytest.raises(ValueError, match="rank 1 gave up"):
        run_rank_threads(3, fn, timeout_s=30)
    assert run_rank_threads(3, lambda r: r * 10) == [0, 10, 20]


def test_a_rank_thread_that_fails_before_a_collective_does_not_keep_the_others_waiting():
    import torch

    from minisgl.distributed import get_comm
    from minisgl.distributed.threads import run_rank_threads

    def fn(rank):
        if rank == 2:
            raise IndexError("rank 2's own bug")
        x = torch.ones(3)
        get_comm().all_reduce(x)  # ranks 0 and 1 wait here for rank 2
        return x

    t0 = time.monotonic()
    with pytest.raises(IndexError, match="rank 2's own bug"):
        run_rank_threads(3, fn, timeout_s=60)
    assert time.monotonic() - t0 < 10, "the others' wait was broken off, not timed out"

    def exchange(rank):
        comm = get_comm()
        x = torch.full((2,), float(rank + 1))
        comm.all_reduce(x)
        y = torch.tensor([rank * 10])
        comm.broadcast(y)
        return x.tolist(), comm.all_gather(torch.tensor([float(rank)])).tolist(), y.item(), comm.min(5 - rank)

    assert run_rank_threads(3, exchange) == [([6.0, 6.0], [0.0, 1.0, 2.0], 0, 3)] * 3

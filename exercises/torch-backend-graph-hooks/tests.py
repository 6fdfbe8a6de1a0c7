"""Tests for torch-backend-graph-hooks: TorchAttnBackend.prepare_for_capture and prepare_for_replay."""

import contextlib

import torch

from judge.testing import PROMPT_IDS, eager_tokens, engine, gpu, hidden_prompts, rng
from minisgl.attention.torch_backend import TorchAttnMetadata
from minisgl.core import Batch, SamplingParams, get_global_ctx

SEQ = 45  # max_seq_len of the engines below: the capture page table is [max_bs, 45]


@contextlib.contextmanager
def capture_backend(bs_list: list):
    """The tiny engine's attention backend, without graphs, its capture buffers allocated for bs_list (so these
    tests do not depend on the engine capturing with your hooks)."""
    with engine(None, max_seq_len_override=SEQ) as llm:
        backend = llm.engine.attn_backend
        backend.init_capture_graph(max_seq_len=llm.engine.max_seq_len, bs_list=list(bs_list))
        yield backend, llm.engine


def capture_batch(runner, bs: int) -> Batch:
    batch = Batch(reqs=[runner.dummy_req] * bs, phase="decode")
    batch.padded_reqs = batch.reqs
    return batch


def same_memory(a, b) -> bool:
    return a.data_ptr() == b.data_ptr()


def draw(r, n: int, lo: int = 3, hi: int = 900) -> list:
    """n different random ints in [lo, hi]: never 0 or 1 (the capture buffers' initial contents) nor a power of two."""
    return r.sample([v for v in range(lo, hi + 1) if v & (v - 1)], n)


def replay_batch(runner, n_real: int, padded: int, lens: list, table: list) -> Batch:
    batch = Batch(reqs=[runner.dummy_req] * n_real, phase="decode")
    batch.padded_reqs = [runner.dummy_req] * padded
    batch.attn_metadata = TorchAttnMetadata(cu_seqlens_q=torch.arange(padded + 1, dtype=torch.int32),
                                            cache_seqlens=torch.tensor(lens, dtype=torch.int32),
                                            page_table=torch.tensor(table, dtype=torch.int32), max_seqlen_q=1)
    return batch


def hidden_metadata(r, padded: int, width: int) -> tuple:
    lens = draw(r, padded, 3, width)
    table = [draw(r, width, 3, 5000) for _ in range(padded)]
    return lens, table


class Watched:
    """A recorded graph wrapped so that its replay first notes what the capture buffers hold."""

    def __init__(self, graph, before):
        self.graph, self.before = graph, before

    def replay(self):
        self.before()
        return self.graph.replay()

    def __getattr__(self, name):
        return getattr(self.graph, name)


def watch_metadata(llm) -> list:
    """Before every graph replay: (size, padded size, seq_lens copied, page table copied) of the step."""
    runner, backend, seen = llm.engine.graph_runner, llm.engine.attn_backend, []
    seq_lens, page_table = backend.capture.seq_lens, backend.capture.page_table  # the tensors the graphs recorded

    def before():
        batch = get_global_ctx().batch  # the batch being forwarded (the graph itself only sees buffers)
        n, meta = batch.padded_size, batch.attn_metadata
        width = meta.page_table.shape[1]
        lens_ok = seq_lens[:n].tolist() == meta.cache_seqlens.tolist()
        table_ok = page_table[:n, :width].tolist() == meta.page_table.tolist()
        seen.append((batch.size, n, width, lens_ok, table_ok))

    for bs in list(runner.graph_map):
        runner.graph_map[bs] = Watched(runner.graph_map[bs], before)
    return seen


def run_watched(graphs: list, prompts: list, max_tokens: list):
    want = eager_tokens(prompts, max_tokens)
    with engine(graphs) as llm:
        seen = watch_metadata(llm)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    return [list(o["token_ids"]) for o in out], want, seen


def check_every_replay(seen: list) -> None:
    assert seen != [], "no decode step replayed a graph"
    for step, (size, padded, width, lens_ok, table_ok) in enumerate(seen):
        where = f"decode step {step} ({size} requests padded to {padded}, page table {padded}x{width})"
        assert lens_ok, f"{where}: at replay, capture.seq_lens[:{padded}] does not hold this step's cache_seqlens"
        assert table_ok, (f"{where}: at replay, capture.page_table[:{padded}, :{width}] does not hold this step's "
                          "page table")


def test_example_capture_metadata_views_the_buffers():
    """prepare_for_capture on a batch of 3: the metadata's tensors are views of the start of the capture buffers
    (4 entries of cu_seqlens_q, 3 of seq_lens, 3 full rows of page_table), and max_seqlen_q is 1."""
    with capture_backend([2, 3, 5]) as (backend, runner):
        cap = backend.capture
        batch = capture_batch(runner, 3)
        backend.prepare_for_capture(batch)
        meta = batch.attn_metadata
        is_meta = isinstance(meta, TorchAttnMetadata)
        assert is_meta, "batch.attn_metadata must be a TorchAttnMetadata"
        shapes = (list(meta.cu_seqlens_q.shape), list(meta.cache_seqlens.shape), list(meta.page_table.shape))
        assert shapes == ([4], [3], [3, SEQ]), "shapes for bs=3: cu_seqlens_q [bs + 1], cache_seqlens [bs], page_table [bs, max_seq_len]"
        for name, view, buffer in (("cu_seqlens_q", meta.cu_seqlens_q, cap.cu_seqlens_q),
                                   ("cache_seqlens", meta.cache_seqlens, cap.seq_lens),
                                   ("page_table", meta.page_table, cap.page_table)):
            shared = same_memory(view, buffer)
            assert shared, f"{name} must be a view of the start of the capture buffer (a slice of self.capture)"
        max_q = meta.max_seqlen_q
        assert max_q == 1, "max_seqlen_q must be 1: one new token per request in decode"


def test_example_same_tokens_with_graphs():
    """Graphs [2, 3, 5], 4 prompts finishing at different times: before every replay the capture buffers hold
    the step's KV lengths and page table, and the tokens equal those of the runs without graphs."""
    got, want, seen = run_watched([2, 3, 5], PROMPT_IDS[:4], [3, 4, 5, 6])
    check_every_replay(seen)
    assert got == want, "the tokens differ from the runs without graphs"


def test_capture_metadata_for_every_size():
    """Each recorded size (hidden lists) gets cu_seqlens_q of bs + 1 entries (0, 1, ..., bs), bs KV lengths, and
    bs full rows of the page table."""
    graphs = rng().choice([[2, 3, 5], [3, 5, 6], [2, 5, 7], [1, 3, 6, 7]])
    with capture_backend(graphs) as (backend, runner):
        for bs in sorted(graphs, reverse=True):
            batch = capture_batch(runner, bs)
            backend.prepare_for_capture(batch)
            meta = batch.attn_metadata
            cu = meta.cu_seqlens_q.tolist()
            assert cu == list(range(bs + 1)), f"bs={bs}: cu_seqlens_q must be the first bs + 1 entries (0, 1, ..., {bs})"
            lens = list(meta.cache_seqlens.shape)
            assert lens == [bs], f"bs={bs}: cache_seqlens must be the first bs entries of capture.seq_lens"
            table = list(meta.page_table.shape)
            assert table == [bs, SEQ], f"bs={bs}: page_table must be the first bs rows, all {SEQ} columns"
            max_q = meta.max_seqlen_q
            assert max_q == 1, f"bs={bs}: max_seqlen_q must be 1 (one new token per request), not the batch size"


def test_capture_views_see_later_copies():
    """Values written into the capture buffers after prepare_for_capture are seen through the metadata
    (that is how a replay sees the next step)."""
    r = rng()
    with capture_backend([2, 3, 5]) as (backend, runner):
        batch = capture_batch(runner, 3)
        backend.prepare_for_capture(batch)
        lens, table = hidden_metadata(r, 5, SEQ)
        backend.capture.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
        backend.capture.page_table.copy_(torch.tensor(table, dtype=torch.int32))
        meta = batch.attn_metadata
        seen_lens = meta.cache_seqlens.tolist()
        assert seen_lens == lens[:3], "cache_seqlens must show what is written into capture.seq_lens later (a view)"
        seen_table = meta.page_table.tolist()
        assert seen_table == table[:3], "page_table must show what is written into capture.page_table later (a view)"


def test_replay_copies_lengths_and_page_table():
    """prepare_for_replay copies cache_seqlens and the page table (5 rows, 9 columns) into the capture buffers,
    in place."""
    r = rng()
    with capture_backend([3, 5, 7]) as (backend, runner):
        cap = backend.capture
        before = (cap.seq_lens, cap.seq_lens.data_ptr(), cap.page_table, cap.page_table.data_ptr())
        lens, table = hidden_metadata(r, 5, 9)
        backend.prepare_for_replay(replay_batch(runner, 5, 5, lens, table))
        same_lens = backend.capture.seq_lens is before[0] and backend.capture.seq_lens.data_ptr() == before[1]
        assert same_lens, "write into capture.seq_lens; never replace it (the graph keeps its address)"
        same_table = backend.capture.page_table is before[2] and backend.capture.page_table.data_ptr() == before[3]
        assert same_table, "write into capture.page_table; never replace it (the graph keeps its address)"
        seq_lens = before[0][:5].tolist()
        assert seq_lens == lens, "capture.seq_lens[:5] must hold this step's cache_seqlens"
        copied = before[2][:5, :9].tolist()
        assert copied == table, "capture.page_table[:5, :9] must hold this step's page table (its width: 9 columns)"


def test_replay_copies_the_padded_rows():
    """4 requests padded to 5: the metadata has 5 rows, and all 5 are copied (batch.padded_size)."""
    r = rng()
    with capture_backend([3, 5, 7]) as (backend, runner):
        lens, table = hidden_metadata(r, 5, 11)
        backend.prepare_for_replay(replay_batch(runner, 4, 5, lens, table))
        padded_len = backend.capture.seq_lens[4:5].tolist()
        assert padded_len == lens[4:], "capture.seq_lens[4]: the padded row must be copied too (batch.padded_size = 5)"
        padded_row = backend.capture.page_table[4:5, :11].tolist()
        assert padded_row == table[4:], "capture.page_table[4]: the padded row must be copied too (batch.padded_size = 5)"


def test_engine_graphs_read_the_capture_buffers():
    """Every recorded graph's metadata views the capture buffers (on a CPU, where each EmulatedGraph keeps its
    batch)."""
    with engine([2, 3, 5]) as llm:
        runner, backend = llm.engine.graph_runner, llm.engine.attn_backend
        for bs, graph in sorted(runner.graph_map.items()):
            batch = getattr(graph, "batch", None)
            if batch is None:
                continue  # a real CUDA graph keeps no Python batch
            meta = batch.attn_metadata
            shared = (same_memory(meta.cache_seqlens, backend.capture.seq_lens)
                      and same_memory(meta.page_table, backend.capture.page_table))
            assert shared, f"graph {bs}: its metadata must view backend.capture's seq_lens and page_table"


def test_hidden_prompts_of_different_lengths():
    """5 hidden prompts finishing at different times on graphs [2, 5, 7]: every replay sees the step's metadata
    in the capture buffers, and the tokens are those of the runs without graphs."""
    r = rng()
    got, want, seen = run_watched([2, 5, 7], hidden_prompts(5), r.sample(range(2, 9), 5))
    check_every_replay(seen)
    assert got == want, "the tokens differ from the runs without graphs"


def test_long_generation():
    """Two hidden prompts, 19 new tokens each, on graphs [2, 3]: the page table grows wider every step and is
    copied in full each time."""
    got, want, seen = run_watched([2, 3], hidden_prompts(2), [19, 19])
    widths = {width for _, _, width, _, _ in seen}
    grew = len(widths) == len(seen)
    assert grew, "every decode step's page table is one column wider than the last"
    check_every_replay(seen)
    assert got == want, "the tokens differ from the run without graphs"


@gpu
def test_gpu_real_capture_same_tokens():
    """A real CUDA capture with TorchStaticAttnBackend, which inherits these two hooks: every replay sees the
    step's metadata, and the tokens are the eager ones."""
    prompts = hidden_prompts(4)
    want = eager_tokens(prompts, 8, device="cuda")
    with engine([2, 3, 5], device="cuda", backend="torch_static") as llm:
        kinds = sorted({type(g).__name__ for g in llm.engine.graph_runner.graph_map.values()})
        assert kinds == ["CUDAGraph"], "on CUDA the graphs are torch.cuda.CUDAGraph"
        seen = watch_metadata(llm)
        out = llm.generate([list(p) for p in prompts], SamplingParams(max_tokens=8, ignore_eos=True))
    got = [list(o["token_ids"]) for o in out]
    check_every_replay(seen)
    assert got == want, "the tokens differ from the run without graphs"

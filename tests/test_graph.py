"""CUDA Graph on a CPU (EmulatedGraph): capture, padding with the dummy request, replay, the fixed-buffer contract."""

from __future__ import annotations

import pytest
import torch

from minisgl.attention.torch_backend import TorchAttnBackend
from minisgl.core import Batch
from minisgl.engine.graph import EmulatedGraph, GraphCaptureBuffer, GraphRunner, make_graph_bs_list
from minisgl.env import ENV
from minisgl.testing import PROMPTS, shared_prefix_prompts
from tests.support import build_llm, greedy, hf_tokens

N = 12
GiB = 1 << 30


class Recorder:
    """Counts decode batches, prefill batches and replays of an LLM, with each replay's real and padded size."""

    def __init__(self, llm):
        self.llm, self.replays, self.batches = llm, [], []
        runner, engine = llm.engine.graph_runner, llm.engine
        orig_replay, orig_forward = runner.replay, engine.forward_batch

        def replay(batch):
            logits = orig_replay(batch)
            buf = runner.buffer
            self.replays.append((batch.size, batch.padded_size, buf.out_loc[: batch.padded_size].tolist(),
                                 logits.shape[0]))
            return logits

        def forward(batch):
            self.batches.append((batch.phase, batch.size))
            return orig_forward(batch)

        runner.replay, engine.forward_batch = replay, forward

    @property
    def decode_batches(self):
        return [size for phase, size in self.batches if phase == "decode"]


def generate(path, prompts, n=N, **kw):
    llm = build_llm(path, **kw)
    rec = Recorder(llm)
    try:
        out = [o["token_ids"] for o in llm.generate(prompts, greedy(n))]
        assert llm.scheduler.check_integrity() == []
        return out, rec
    finally:
        llm.shutdown()


# -- the batch-size list
@pytest.mark.parametrize("ceiling, expected", [
    (0, []),
    (1, [1]),
    (4, [1, 2, 4]),
    (160, [1, 2, 4] + list(range(8, 161, 8))),
    (256, [1, 2, 4] + list(range(8, 257, 8))),
    (20, [1, 2, 4, 8, 16]),
    (-5, []),
])
def test_bs_list_for_a_ceiling(ceiling, expected):
    assert make_graph_bs_list(None, ceiling, is_cuda=True, free_memory=140 * GiB) == expected
    assert make_graph_bs_list(None, ceiling, is_cuda=False, free_memory=0) == expected


def test_bs_list_default_ceiling_follows_free_memory():
    big = make_graph_bs_list(None, None, is_cuda=True, free_memory=81 * GiB)
    small = make_graph_bs_list(None, None, is_cuda=True, free_memory=79 * GiB)
    assert max(big) == 256 and max(small) == 160 and small[:4] == [1, 2, 4, 8]
    assert make_graph_bs_list(None, None, is_cuda=False, free_memory=81 * GiB) == []  # off on a CPU by default


def test_explicit_bs_list_wins():
    assert make_graph_bs_list([8, 3, 3, 1], 256, is_cuda=True, free_memory=140 * GiB) == [1, 3, 8]
    assert make_graph_bs_list([0, 2], None, is_cuda=False, free_memory=0) == [2]


# -- equality with and without graphs, and with Hugging Face
@pytest.mark.parametrize("nprompts", [1, 2, 3, 4, 5, 8], ids=lambda n: f"bs{n}")
@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "no-overlap"])
def test_graphs_equal_eager_and_hf(qwen3, nprompts, page_size, overlap):
    ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
    prompts = PROMPTS[:nprompts]
    kw = dict(page_size=page_size, num_page_override=1024)  # room for all: they decode together
    eager, rec0 = generate(qwen3, prompts, **kw)
    graph, rec = generate(qwen3, prompts, cuda_graph_max_bs=8, **kw)
    assert rec0.replays == []
    assert graph == eager == hf_tokens(qwen3, prompts, N)
    # every decode step replays a graph, padded up to the nearest captured size
    assert len(rec.replays) == len(rec.decode_batches) == N - 1
    for size, padded, _, logits_rows in rec.replays:
        assert padded == min(bs for bs in [1, 2, 4, 8] if bs >= size)
        assert logits_rows == size  # padded logits are discarded


def test_graphs_with_radix_cache_hits(qwen3):
    prompts = shared_prefix_prompts(4)
    llm = build_llm(qwen3, cuda_graph_max_bs=4, page_size=16)
    rec = Recorder(llm)
    try:
        out = llm.generate(prompts[:1], greedy(N)) + llm.generate(prompts[1:], greedy(N))
        assert llm.scheduler.cache_manager.hit_tokens > 0
    finally:
        llm.shutdown()
    assert [o["token_ids"] for o in out] == hf_tokens(qwen3, prompts, N)
    assert len(rec.replays) == len(rec.decode_batches) > 0


def test_prefill_never_replays_and_large_batches_run_eagerly(qwen3):
    # 8 requests decode together: too large for a graph
    out, rec = generate(qwen3, PROMPTS, cuda_graph_max_bs=4, num_page_override=1024)
    assert out == hf_tokens(qwen3, PROMPTS, N)
    assert rec.decode_batches == [8] * (N - 1) and rec.replays == []
    assert [phase for phase, _ in rec.batches].count("prefill") >= 1
    out, rec = generate(qwen3, PROMPTS[:3], cuda_graph_max_bs=4, max_running_req=3)
    assert all(size <= 4 for size, _, _, _ in rec.replays)
    assert len(rec.replays) == len(rec.decode_batches)


def test_capture_order_is_largest_first(qwen3, monkeypatch):
    order = []
    orig = TorchAttnBackend.prepare_for_capture
    monkeypatch.setattr(TorchAttnBackend, "prepare_for_capture", lambda self, b: (order.append(b.size), orig(self, b)))
    llm = build_llm(qwen3, cuda_graph_max_bs=16)
    try:
        assert order == [16, 8, 4, 2, 1]
        assert sorted(llm.engine.graph_runner.graph_map) == [1, 2, 4, 8, 16]
        assert all(isinstance(g, EmulatedGraph) for g in llm.engine.graph_runner.graph_map.values())
    finally:
        llm.shutdown()


def test_graphs_are_off_on_cpu_by_default(qwen3):
    llm = build_llm(qwen3)
    try:
        assert llm.engine.graph_runner.graph_bs_list == [] and llm.engine.graph_runner.graph_map == {}
    finally:
        llm.shutdown()


# -- the fixed-buffer contract: leaving out any one copy changes the output
def _copy_without(field):
    def copy_from(self: GraphCaptureBuffer, batch: Batch) -> None:
        s = slice(batch.padded_size)
        for name in ("input_ids", "out_loc", "positions"):
            if name != field:
                getattr(self, name)[s] = getattr(batch, name)
    return copy_from


@pytest.mark.parametrize("field", ["input_ids", "positions", "out_loc"])
def test_forgetting_to_copy_an_input_breaks_replay(qwen3, monkeypatch, field):
    ENV.DISABLE_OVERLAP_SCHEDULING.value = True
    monkeypatch.setattr(GraphCaptureBuffer, "copy_from", _copy_without(field))
    out, rec = generate(qwen3, PROMPTS[:3], cuda_graph_max_bs=4)
    assert rec.replays
    assert out != hf_tokens(qwen3, PROMPTS[:3], N)


def test_forgetting_to_copy_seq_lens_breaks_replay(qwen3, monkeypatch):
    def prepare_for_replay(self, batch):
        bs, meta = batch.padded_size, batch.attn_metadata
        self.capture.page_table[:bs, : meta.page_table.size(1)].copy_(meta.page_table)  # seq_lens left out

    monkeypatch.setattr(TorchAttnBackend, "prepare_for_replay", prepare_for_replay)
    out, _ = generate(qwen3, PROMPTS[:3], cuda_graph_max_bs=4)
    assert out != hf_tokens(qwen3, PROMPTS[:3], N)


def test_forgetting_to_copy_the_page_table_breaks_replay(qwen3, monkeypatch):
    def prepare_for_replay(self, batch):
        self.capture.seq_lens[: batch.padded_size].copy_(batch.attn_metadata.cache_seqlens)  # page table left out

    monkeypatch.setattr(TorchAttnBackend, "prepare_for_replay", prepare_for_replay)
    out, _ = generate(qwen3, PROMPTS[:3], cuda_graph_max_bs=4)
    assert out != hf_tokens(qwen3, PROMPTS[:3], N)


def test_rebinding_a_buffer_instead_of_writing_into_it_breaks_replay(qwen3, monkeypatch):
    def copy_from(self, batch):
        s = slice(batch.padded_size)
        self.input_ids = batch.input_ids.clone()  # a new tensor: the graph still reads the old one
        self.out_loc[s] = batch.out_loc
        self.positions[s] = batch.positions

    monkeypatch.setattr(GraphCaptureBuffer, "copy_from", copy_from)
    out, _ = generate(qwen3, PROMPTS[:3], cuda_graph_max_bs=4)
    assert out != hf_tokens(qwen3, PROMPTS[:3], N)


# -- the dummy request
def test_dummy_requests_write_only_to_the_dummy_page(qwen3):
    for page_size in (1, 16):
        llm = build_llm(qwen3, cuda_graph_max_bs=8, page_size=page_size)
        rec = Recorder(llm)
        try:
            dummy_page = llm.engine.kv_cache.dummy_page
            llm.generate(PROMPTS[:3], greedy(N))
        finally:
            llm.shutdown()
        assert rec.replays
        for size, padded, out_loc, _ in rec.replays:
            assert padded > size
            assert all(loc // page_size == dummy_page for loc in out_loc[size:]), "a dummy wrote outside its page"
            assert all(loc // page_size != dummy_page for loc in out_loc[:size]), "a real request used the dummy page"


def test_dummy_padding_leaves_real_kv_untouched(qwen3):
    """Real requests' KV after a padded (bs 3 -> 4) run equals their KV after an unpadded eager run."""
    kv = {}
    for graphs in (None, 4):
        llm = build_llm(qwen3, cuda_graph_max_bs=graphs, cache_type="naive")
        ENV.DISABLE_OVERLAP_SCHEDULING.value = True
        seen = []
        orig = llm.scheduler.cache_manager.release
        # read each request's KV just before its pages are returned
        def release(req, orig=orig, llm=llm, seen=seen):
            n = req.cached_len
            loc = llm.engine.page_table[req.table_idx, :n].long()
            kv_pool = llm.engine.kv_cache
            seen.append((req.uid, kv_pool.k_cache(0)[loc].clone(), kv_pool.v_cache(1)[loc].clone()))
            orig(req)
        llm.scheduler.cache_manager.release = release
        try:
            llm.generate(PROMPTS[:3], greedy(N))
        finally:
            llm.shutdown()
        kv[graphs] = sorted(seen, key=lambda t: t[0])
    for (u1, k1, v1), (u2, k2, v2) in zip(kv[None], kv[4]):
        # equal up to float rounding (a 4-row matmul may round differently from a 3-row one); a dummy's write into
        # a real slot would replace the values entirely
        assert u1 == u2
        assert torch.allclose(k1, k2, atol=1e-5, rtol=1e-5) and torch.allclose(v1, v2, atol=1e-5, rtol=1e-5)


# -- teardown
def test_destroy_and_rebuild_twice_in_one_process(qwen3):
    outs = []
    for _ in range(2):
        llm = build_llm(qwen3, cuda_graph_max_bs=4)
        runner: GraphRunner = llm.engine.graph_runner
        assert sorted(runner.graph_map) == [1, 2, 4]
        outs.append([o["token_ids"] for o in llm.generate(PROMPTS[:3], greedy(N))])
        graphs = list(runner.graph_map.values())
        llm.shutdown()
        assert runner.graph_map == {} and runner.buffer is None and runner.max_graph_bs == 0
        assert all(g.fn is None for g in graphs)  # each graph released what it held
        assert llm.engine.attn_backend.capture is None
    assert outs[0] == outs[1] == hf_tokens(qwen3, PROMPTS[:3], N)


def test_destroyed_graphs_fall_back_to_eager(qwen3):
    llm = build_llm(qwen3, cuda_graph_max_bs=4)
    rec = Recorder(llm)
    try:
        llm.engine.graph_runner.destroy_cuda_graphs()
        out = [o["token_ids"] for o in llm.generate(PROMPTS[:3], greedy(N))]
    finally:
        llm.shutdown()
    assert rec.replays == [] and out == hf_tokens(qwen3, PROMPTS[:3], N)

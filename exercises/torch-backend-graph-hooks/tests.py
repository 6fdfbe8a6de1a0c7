"""Tests for torch-backend-graph-hooks: TorchAttnBackend.prepare_for_capture and prepare_for_replay."""

import torch

from judge.testing import PROMPT_IDS, Trace, eager_tokens, engine, generate, gpu, run_with_graphs
from minisgl.attention.torch_backend import TorchAttnMetadata
from minisgl.core import Batch, SamplingParams


def capture_batch(runner, bs: int) -> Batch:
    batch = Batch(reqs=[runner.dummy_req] * bs, phase="decode")
    batch.padded_reqs = batch.reqs
    return batch


def same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.data_ptr() == b.data_ptr()


def test_example_capture_metadata_views_the_buffers():
    """prepare_for_capture: the metadata's tensors are views of the first bs entries of the capture buffers."""
    with engine([1, 2, 4]) as llm:
        backend, runner = llm.engine.attn_backend, llm.engine.graph_runner
        cap = backend.capture
        batch = capture_batch(runner, 2)
        backend.prepare_for_capture(batch)
        meta = batch.attn_metadata
        assert isinstance(meta, TorchAttnMetadata)
        shapes = (list(meta.cu_seqlens_q.shape), list(meta.cache_seqlens.shape), list(meta.page_table.shape))
        assert shapes == ([3], [2], [2, llm.engine.max_seq_len])
        assert same_memory(meta.cu_seqlens_q, cap.cu_seqlens_q), "cu_seqlens_q must be a view of capture.cu_seqlens_q"
        assert same_memory(meta.cache_seqlens, cap.seq_lens), "cache_seqlens must be a view of capture.seq_lens"
        assert same_memory(meta.page_table, cap.page_table), "page_table must be a view of capture.page_table"
        assert meta.max_seqlen_q == 1


def test_example_same_tokens_with_graphs():
    """The tiny model with graphs [1, 2, 4]: every decode step replays, and the tokens equal those of the
    run without graphs."""
    got, want, replays, decode_steps = run_with_graphs([1, 2, 4], PROMPT_IDS[:3], 6)
    assert replays == decode_steps > 0, "every decode step must replay a graph"
    assert got == want, "the tokens differ from the run without graphs"


def test_capture_metadata_for_every_size():
    """Each recorded size gets cu_seqlens_q of bs + 1 entries (0, 1, ..., bs) and bs rows."""
    with engine([1, 2, 4, 8]) as llm:
        backend, runner = llm.engine.attn_backend, llm.engine.graph_runner
        for bs in (8, 4, 2, 1):
            batch = capture_batch(runner, bs)
            backend.prepare_for_capture(batch)
            meta = batch.attn_metadata
            cu = meta.cu_seqlens_q.tolist()
            assert cu == list(range(bs + 1)), f"bs={bs}"
            rows = (meta.cache_seqlens.shape[0], meta.page_table.shape[0])
            assert rows == (bs, bs), f"bs={bs}: cache_seqlens and page_table must have bs rows"


def test_replay_copies_lengths_and_page_table():
    """prepare_for_replay copies cache_seqlens and the page table into the capture buffers, in place."""
    with engine([1, 2, 4]) as llm:
        backend, runner = llm.engine.attn_backend, llm.engine.graph_runner
        cap = backend.capture
        before = (cap.seq_lens, cap.seq_lens.data_ptr(), cap.page_table, cap.page_table.data_ptr())
        batch = capture_batch(runner, 4)
        lens = torch.tensor([5, 3, 7, 1], dtype=torch.int32)
        table = torch.arange(28, dtype=torch.int32).reshape(4, 7) + 100
        batch.attn_metadata = TorchAttnMetadata(cu_seqlens_q=torch.arange(5, dtype=torch.int32),
                                                cache_seqlens=lens, page_table=table, max_seqlen_q=1)
        backend.prepare_for_replay(batch)
        in_place = (backend.capture.seq_lens is before[0] and backend.capture.seq_lens.data_ptr() == before[1]
                    and backend.capture.page_table is before[2] and backend.capture.page_table.data_ptr() == before[3])
        assert in_place, "write into capture.seq_lens and capture.page_table; never replace them"
        seq_lens = backend.capture.seq_lens[:4]
        assert torch.equal(seq_lens, lens), "capture.seq_lens[:4] must hold this step's cache_seqlens"
        copied_table = backend.capture.page_table[:4, :7]
        assert torch.equal(copied_table, table), "capture.page_table[:4, :7] must hold this step's page table"


def test_replay_copies_the_padded_rows():
    """3 requests padded to 4: the metadata has 4 rows, and all 4 are copied (batch.padded_size)."""
    with engine([1, 2, 4]) as llm:
        backend, runner = llm.engine.attn_backend, llm.engine.graph_runner
        batch = Batch(reqs=[runner.dummy_req] * 3, phase="decode")
        batch.padded_reqs = [runner.dummy_req] * 4
        lens = torch.tensor([9, 8, 6, 1], dtype=torch.int32)
        table = torch.full((4, 9), 42, dtype=torch.int32)
        batch.attn_metadata = TorchAttnMetadata(cu_seqlens_q=torch.arange(5, dtype=torch.int32),
                                                cache_seqlens=lens, page_table=table, max_seqlen_q=1)
        backend.prepare_for_replay(batch)
        seq_lens = backend.capture.seq_lens[:4]
        assert torch.equal(seq_lens, lens)
        copied_table = backend.capture.page_table[:4, :9]
        assert torch.equal(copied_table, table)


def test_prompts_of_different_lengths():
    """5 prompts of 3 to 12 tokens, finishing at different times, on graphs [1, 2, 4, 8]: the same tokens
    as the runs without graphs (every request has its own KV length and page-table row)."""
    prompts = PROMPT_IDS[:5]
    max_tokens = [3, 5, 7, 4, 6]
    want = [eager_tokens([p], n)[0] for p, n in zip(prompts, max_tokens)]
    with engine([1, 2, 4, 8]) as llm:
        trace = Trace(llm)
        out = llm.generate(prompts, [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [o["token_ids"] for o in out]
    replays, decode_steps = len(trace.replays), len(trace.decode_steps)
    assert replays == decode_steps > 0
    assert got == want, "the tokens differ from the runs without graphs"


def test_long_generation():
    """Two prompts, 20 new tokens each: the page table grows wider every step and must be copied in full."""
    want = eager_tokens(PROMPT_IDS[3:5], 20)
    with engine([1, 2]) as llm:
        got = generate(llm, PROMPT_IDS[3:5], 20)
    assert got == want, "the tokens differ from the run without graphs"


@gpu
def test_gpu_real_capture_same_tokens():
    """A real CUDA capture with TorchStaticAttnBackend, which inherits these two hooks: the eager tokens."""
    want = eager_tokens(PROMPT_IDS[:3], 8, device="cuda")
    with engine([1, 2, 4], device="cuda", backend="torch_static") as llm:
        kinds = {type(g).__name__ for g in llm.engine.graph_runner.graph_map.values()}
        assert kinds == {"CUDAGraph"}
        got = generate(llm, PROMPT_IDS[:3], 8)
    assert got == want, "the tokens differ from the run without graphs"

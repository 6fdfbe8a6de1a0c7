"""Mixture of Experts (minisgl/moe, models/qwen3_moe.py): a tiny random Qwen3-MoE (8 experts, top-2; with and
without renormalised routing weights, a dense layer among the sparse ones) generates transformers' greedy tokens
with the torch reference, the fused layout in torch and the Triton kernel in the interpreter, radix cache and
chunked prefill on; moe_align_block_size's layout and the backends agree on random routings."""

from __future__ import annotations

import os

import pytest
import torch

# Triton's interpreter is chosen when triton is first imported in this process (tests/test_kernels.py does the same)
os.environ.setdefault("TRITON_INTERPRET", "1")

from minisgl.core import SamplingParams
from minisgl.llm import LLM
from minisgl.moe import MOE_BACKENDS, moe_align_block_size, route
from minisgl.testing import hf_greedy_with_margins, tiny_moe
from tests.support import assert_greedy_equal

PROMPTS = [[1, 2, 3, 4, 5], [7, 8], [9] * 20, [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], [400, 17]]
N = 8


@pytest.fixture(scope="module", params=[True, False], ids=["norm_topk_prob", "raw_topk_weights"])
def moe_model(request):
    path = tiny_moe(request.param, seed=3, gate_std=0.5)  # a sharp router: top-2 choices clear-cut
    hf, margins = hf_greedy_with_margins(path, PROMPTS, N)
    return path, hf, margins


@pytest.mark.parametrize("backend", ["torch", "fused_torch", "triton"])
def test_greedy_tokens_equal_transformers(moe_model, backend):
    path, hf, margins = moe_model
    llm = LLM(path, moe_backend=backend, page_size=4, chunked_prefill_size=8, cache_type="radix")
    try:
        got = [o["token_ids"] for o in llm.generate(PROMPTS, SamplingParams(max_tokens=N, ignore_eos=True))]
        again = [o["token_ids"] for o in llm.generate(PROMPTS[:2], SamplingParams(max_tokens=N, ignore_eos=True))]
    finally:
        llm.shutdown()
    assert_greedy_equal(got, hf, margins, backend)
    assert again == got[:2], "the radix cache's hits change nothing"


def test_align_lays_out_every_pair_once_by_expert_in_whole_blocks():
    g = torch.Generator().manual_seed(0)
    for t, k, experts, block in ((1, 1, 4, 16), (37, 2, 8, 16), (300, 4, 16, 16), (5, 2, 8, 4)):
        ids = torch.stack([torch.randperm(experts, generator=g)[:k] for _ in range(t)])
        sorted_ids, block_expert, total = moe_align_block_size(ids, block, experts)
        assert total == sorted_ids.numel() == block_expert.numel() * block and total % block == 0
        real = sorted_ids[sorted_ids < t * k]
        assert sorted(real.tolist()) == list(range(t * k)), "every (token, slot) pair exactly once"
        flat = ids.reshape(-1)
        row_expert = block_expert.repeat_interleave(block)
        assert torch.equal(flat[real], row_expert[sorted_ids < t * k]), "each pair in a block of its expert"
        assert torch.all(block_expert[1:] >= block_expert[:-1]), "experts in ascending order"
        for e in range(experts):
            mine = sorted_ids[row_expert == e]
            pairs = mine[mine < t * k]
            assert torch.all(pairs[1:] > pairs[:-1]), f"expert {e}: its pairs in ascending order"
            count = int((flat == e).sum())
            assert mine.numel() == (count + block - 1) // block * block, f"expert {e}: padded to whole blocks"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_backends_agree_on_random_routings(dtype):
    g = torch.Generator().manual_seed(1)
    t, hidden, inter, experts, k = 41, 64, 32, 8, 2
    x = torch.randn(t, hidden, generator=g).to(dtype)
    gate_up = (torch.randn(experts * 2 * inter, hidden, generator=g) / 8).to(dtype)
    down = (torch.randn(experts * hidden, inter, generator=g) / 8).to(dtype)
    weights, ids = route(torch.randn(t, experts, generator=g).to(dtype), k, True)
    want = MOE_BACKENDS.get("torch")(x, weights, ids, gate_up, down)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    for name in ("fused_torch", "triton"):
        got = MOE_BACKENDS.get(name)(x, weights, ids, gate_up, down)
        assert got.dtype == dtype and got.shape == (t, hidden)
        assert torch.allclose(got.float(), want.float(), atol=tol, rtol=tol), f"{name}: {(got - want).abs().max()}"


def test_routing_is_hugging_faces():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0], [0.0, 3.0, 3.0, 1.0]])
    w, ids = route(logits, 2, False)
    probs = logits.softmax(-1)
    assert ids[0].tolist() == [0, 1] and torch.allclose(w[0], probs[0, :2])
    assert set(ids[1].tolist()) == {1, 2}
    w, _ = route(logits, 2, True)
    assert torch.allclose(w.sum(-1), torch.ones(2))


def test_an_unknown_backend_and_tp_are_refused(moe_model):
    path = moe_model[0]
    with pytest.raises(ValueError, match="MoE backend"):
        LLM(path, moe_backend="cuda-magic")
    with pytest.raises(ValueError, match="8 experts"):
        LLM(path, tp_size=2)

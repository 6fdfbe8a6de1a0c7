"""Sampling: temperature, top-k and top-p are reproducible with a seed, and the filtered distribution is right."""

from __future__ import annotations

import torch

from minisgl.core import SamplingParams
from minisgl.engine.sample import filtered_probs
from minisgl.testing import PROMPTS
from tests.support import build_llm, greedy


def test_top_k_keeps_exactly_k_largest():
    logits = torch.tensor([0.1, 2.0, -1.0, 1.5, 0.7])
    p = filtered_probs(logits, SamplingParams(temperature=1.0, top_k=2))
    assert (p > 0).tolist() == [False, True, False, True, False]
    full = torch.softmax(logits, -1)
    assert torch.allclose(p[[1, 3]], full[[1, 3]] / full[[1, 3]].sum())


def test_top_p_keeps_the_smallest_nucleus():
    probs = torch.tensor([0.5, 0.05, 0.3, 0.15])
    logits = probs.log()
    # 0.5 + 0.3 = 0.8 < 0.85, so the third most likely (0.15) is needed too; 0.05 is not
    p = filtered_probs(logits, SamplingParams(temperature=1.0, top_p=0.85))
    assert (p > 0).tolist() == [True, False, True, True]
    assert torch.allclose(p.sum(), torch.tensor(1.0))
    # exactly reaching top_p with the first two: nothing else is kept
    p = filtered_probs(logits, SamplingParams(temperature=1.0, top_p=0.8))
    assert (p > 0).tolist() == [True, False, True, False]
    # the most likely token is always kept
    p = filtered_probs(logits, SamplingParams(temperature=1.0, top_p=0.01))
    assert (p > 0).tolist() == [True, False, False, False]


def test_temperature_sharpens_and_flattens():
    logits = torch.tensor([1.0, 2.0, 3.0])
    cold = filtered_probs(logits, SamplingParams(temperature=0.1))
    hot = filtered_probs(logits, SamplingParams(temperature=10.0))
    assert cold[2] > 0.99 and hot.max() - hot.min() < 0.1


def test_seeded_sampling_is_reproducible_and_seed_dependent(qwen3):
    llm = build_llm(qwen3)
    try:
        def sample(seed):
            params = SamplingParams(temperature=1.0, top_p=0.95, max_tokens=24, ignore_eos=True, seed=seed)
            return [o["token_ids"] for o in llm.generate(PROMPTS[:4], params)]

        a, b, c = sample(1), sample(1), sample(2)
        assert a == b
        assert a != c
        # a request's sample does not depend on what else is in the batch
        alone = llm.generate(PROMPTS[:1], SamplingParams(temperature=1.0, top_p=0.95, max_tokens=24,
                                                         ignore_eos=True, seed=1))
        assert alone[0]["token_ids"] == a[0]
    finally:
        llm.shutdown()


def test_top_k_one_equals_greedy(qwen3):
    llm = build_llm(qwen3)
    try:
        g = [o["token_ids"] for o in llm.generate(PROMPTS, greedy(16))]
        k1 = llm.generate(PROMPTS, SamplingParams(temperature=0.8, top_k=1, max_tokens=16, ignore_eos=True, seed=3))
        assert [o["token_ids"] for o in k1] == g
    finally:
        llm.shutdown()


def test_sampled_tokens_stay_inside_top_k(qwen3):
    """With top-k=3, every sampled token is among the 3 most likely at its step (checked by re-running greedy
    prefixes through the model)."""
    from minisgl.testing import hf_model

    llm = build_llm(qwen3)
    try:
        out = llm.generate(PROMPTS[:2], SamplingParams(temperature=2.0, top_k=3, max_tokens=12, ignore_eos=True,
                                                       seed=7))
        ids = [llm.tokenizer.encode(p) for p in PROMPTS[:2]]
    finally:
        llm.shutdown()
    model = hf_model(qwen3)
    for prompt, o in zip(ids, out):
        seq = list(prompt)
        for tok in o["token_ids"]:
            with torch.no_grad():
                logits = model(torch.tensor([seq])).logits[0, -1]
            assert tok in torch.topk(logits, 3).indices.tolist()
            seq.append(tok)

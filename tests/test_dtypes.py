"""bfloat16 and float16 run end to end; their KV pool and weights take that dtype."""

from __future__ import annotations

import pytest
import torch

from minisgl.testing import PROMPTS
from tests.support import build_llm, greedy, hf_tokens


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_generates_close_to_float32(qwen3, dtype):
    llm = build_llm(qwen3, dtype=dtype)
    try:
        assert llm.engine.kv_cache.k_cache(0).dtype == dtype
        assert llm.engine.model.model.embed_tokens.weight.dtype == dtype
        out = [o["token_ids"] for o in llm.generate(PROMPTS, greedy(8))]
    finally:
        llm.shutdown()
    ref = hf_tokens(qwen3, PROMPTS, 8)
    assert all(len(o) == 8 for o in out)
    # rounding differs from float32, but the first token agrees for most prompts
    assert sum(o[0] == r[0] for o, r in zip(out, ref)) >= len(PROMPTS) // 2

"""The real small model: SmolLM2-135M-Instruct continues "The capital of France is" exactly as transformers does."""

from __future__ import annotations

import pytest
import torch

from minisgl.llm import LLM
from minisgl.testing import is_complete_model_dir, smollm2_dir
from tests.support import greedy, hf_tokens, need

PROMPT = "The capital of France is"


@pytest.mark.slow
def test_smollm2_matches_transformers_for_24_greedy_tokens():
    need(is_complete_model_dir(smollm2_dir()), "SmolLM2 is not set up: run python tools/setup_models.py")
    path = smollm2_dir()
    llm = LLM(path, dtype=torch.float32, device="cpu", max_running_req=4, max_seq_len_override=256)
    try:
        out = llm.generate([PROMPT, "def fibonacci(n):"], greedy(24))
        assert llm.scheduler.check_integrity() == []
    finally:
        llm.shutdown()
    ref = hf_tokens(path, [PROMPT, "def fibonacci(n):"], 24)
    assert [o["token_ids"] for o in out] == ref
    assert "Paris" in out[0]["text"]

"""minisgl in Pyodide (the numpy `torch` layer, Node runner) gives the token ids of minisgl on real PyTorch: the tiny
Qwen3 and Llama models, 3 prompts x 8 new tokens, graphs off and on (EmulatedGraph), page sizes 1 and 16, radix and
naive caches, backends torch and torch_static; and a seeded sampled request gives the same tokens."""

from __future__ import annotations

import json

import pytest

from browser.node import exec_in_node
from tests.browser import judge_browser
from tests.browser.judge_browser import need_layer

# Runs as is on CPython (real torch) and in Pyodide (the layer); RESULT is JSON.
CODE = r"""
import itertools
import torch
from minisgl.core import SamplingParams
from minisgl.llm import LLM
from minisgl.testing import tiny_model

PROMPTS = [[17, 301, 45], [5, 88, 140, 7, 260, 33], [400, 12, 9, 77, 150, 3, 201, 64, 95]]
MODELS = {"qwen3-gqa-untied": tiny_model("qwen3"), "llama-mha-tied": tiny_model("llama", gqa=False, tied=True)}


def run(path, graphs, page, cache, backend, params, prompts=PROMPTS):
    llm = LLM(str(path), dtype=torch.float32, max_running_req=8, num_page_override=256, max_seq_len_override=160,
              device="cpu", page_size=page, cache_type=cache, attention_backend=backend,
              cuda_graph_max_bs=4 if graphs else 0)
    try:
        return [o["token_ids"] for o in llm.generate(prompts, params)]
    finally:
        llm.shutdown()


greedy = SamplingParams(max_tokens=8, ignore_eos=True)
sampled = [SamplingParams(max_tokens=8, ignore_eos=True, temperature=0.8, top_k=20, top_p=0.9, seed=1234 + i)
           for i in range(len(PROMPTS))]
RESULT = {}
for name, path in MODELS.items():
    for graphs, page, cache, backend in itertools.product((False, True), (1, 16), ("radix", "naive"),
                                                          ("torch", "torch_static")):
        RESULT[f"{name} graphs={graphs} page={page} {cache} {backend}"] = run(path, graphs, page, cache, backend,
                                                                             greedy)
    RESULT[f"{name} sampled seed=1234"] = run(path, False, 1, "radix", "torch", sampled)
    RESULT[f"{name} sampled alone"] = run(path, True, 16, "naive", "torch_static", sampled[1], PROMPTS[1:2])
"""


@pytest.fixture(scope="module")
def site():
    return judge_browser.site()


@pytest.fixture(scope="module")
def tokens(site, qwen3, llama):
    """(real torch, Pyodide): the same code's RESULT on CPython with torch 2.13 and in Pyodide with the layer."""
    need_layer()
    from minisgl.testing import tiny_model, tiny_models_dir

    tiny_model("llama", gqa=False, tied=True)
    scope: dict = {}
    exec(compile(CODE, "<tokens>", "exec"), scope)
    want = json.loads(json.dumps(scope["RESULT"]))
    got = exec_in_node(CODE, site=site, mounts=[(str(tiny_models_dir()), "/host-models")],
                       env={"MINISGL_TEST_MODELS": "/host-models"})
    assert set(got) == set(want) and len(want) == 36
    return want, got


def test_greedy_tokens_in_pyodide_equal_real_torch(tokens):
    want, got = tokens
    keys = [k for k in want if "sampled" not in k]
    assert len(keys) == 32
    diff = {k: (want[k], got[k]) for k in keys if want[k] != got[k]}
    assert not diff, json.dumps(diff, indent=1)
    for model in ("qwen3", "llama"):
        runs = [want[k] for k in keys if k.startswith(model)]
        assert all(r == runs[0] for r in runs), f"{model}: greedy tokens are the same in every configuration"


def test_seeded_sampling_in_pyodide_is_reproducible(tokens):
    _, got = tokens
    for model in ("qwen3-gqa-untied", "llama-mha-tied"):
        batched, alone = got[f"{model} sampled seed=1234"], got[f"{model} sampled alone"]
        assert alone == batched[1:2], "a seeded request samples the same tokens whatever its batch and engine"
        greedy = got[f"{model} graphs=False page=1 radix torch"]
        assert batched != greedy, "the sampled request is not greedy"


def test_seeded_sampling_equals_real_torch(tokens):
    """The layer's Generator is torch's MT19937 stream, so a seeded sampled request gives torch's tokens."""
    want, got = tokens
    for model in ("qwen3-gqa-untied", "llama-mha-tied"):
        assert got[f"{model} sampled seed=1234"] == want[f"{model} sampled seed=1234"], model

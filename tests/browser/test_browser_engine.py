"""minisgl and the judge on the browser's torch: in a Python 3.12 venv with numpy 2.0.2, where `import torch` is the
layer and `import safetensors` the numpy reader (real torch is not importable there), the engine gives the same
greedy tokens as on real PyTorch in every CPU configuration, and seeded sampled requests give real torch's tokens
(alone or in a batch). The judge's verdicts on the browser's torch are compared with real torch's in Pyodide itself
(tests/test_bank.py: the Node runner and Chromium)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.browser.browser_engine import CONFIGS, chunked_tokens, engine_tokens, sampled_tokens, seeded_tokens
from tests.browser.browser_env import HERE, MISSING_PYTHON, ROOT, browser_python
from tests.support import need


@pytest.fixture(scope="module")
def runs():
    """(real torch's results, the layer's results): the layer's process runs while this one computes torch's."""
    need(browser_python() is not None, MISSING_PYTHON)
    from minisgl.testing import tiny_model

    # made here if missing: the browser's Python has no transformers
    tiny_model("qwen3"), tiny_model("llama"), tiny_model("llama", gqa=False, tied=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.Popen([browser_python(), str(HERE / "run_engine.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        want = json.loads(json.dumps({"engine": engine_tokens(), "sampled": sampled_tokens(), "seeded": seeded_tokens(),
                                      "chunked": chunked_tokens()}))
        out, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, f"the engine failed on the browser's torch:\n{err[-4000:]}"
    got = json.loads(out)
    assert got["numpy"] == "2.0.2" and got["python"].startswith("3.12") and "numpy" in got["torch"], got["torch"]
    return want, got


@pytest.mark.parametrize("config", ["-".join(map(str, c.values())) for c in CONFIGS])
def test_greedy_tokens_match_real_torch(runs, config):
    want, got = runs
    w, g = want["engine"][config], got["engine"][config]
    assert g["first"] == w["first"], f"{config}: layer {g['first']} vs torch {w['first']}"
    assert g["again"] == w["again"] == w["first"], config
    assert g["graphs"] == w["graphs"], config  # EmulatedGraph captured the same batch sizes
    assert len(w["first"]) == 3 and all(len(t) == 8 for t in w["first"])


@pytest.mark.parametrize("overlap", [True, False])
def test_chunked_prefill_and_eviction_match_real_torch(runs, overlap):
    want, got = runs
    w, g = want["chunked"][f"overlap={overlap}"], got["chunked"][f"overlap={overlap}"]
    assert g["tokens"] == w["tokens"]
    assert g["tokens"][0] == g["tokens"][1] and g["integrity"] == [] == w["integrity"]


def test_graphs_are_captured_when_asked(runs):
    _, got = runs
    for config, r in got["engine"].items():
        assert r["graphs"] == ([1, 2, 4] if "-True-" in config else []), config


@pytest.mark.parametrize("graphs", [False, True])
def test_seeded_sampling_is_reproducible_whatever_the_batch(runs, graphs):
    """The same seed gives the same tokens, alone or beside other requests, graphs or not; another seed other
    tokens; and they are real torch's tokens (the layer draws torch's MT19937 stream)."""
    want, got = runs
    assert got["sampled"][f"graphs={graphs}"] == want["sampled"][f"graphs={graphs}"]
    for side, res in (("torch", want), ("layer", got)):
        r = res["sampled"][f"graphs={graphs}"]
        assert r["alone"] == r["again"] == r["in_batch"], (side, r)
        assert r["other_seed"] != r["alone"], (side, r)
        assert len(r["alone"]) == 8
    key = f"graphs={graphs}"
    assert got["sampled"][key]["alone"] == got["sampled"]["graphs=False"]["alone"]
    assert got["sampled"][key]["greedy_in_batch"] == want["sampled"][key]["greedy_in_batch"]  # greedy beside samples


@pytest.mark.parametrize("model", ["qwen3-gqa-untied", "llama-mha-tied"])
def test_seeded_sampling_equals_real_torch(runs, model):
    """test_node_tokens.py's scenario (the browser's Node runner) on CPython 3.12 + numpy 2.0.2: seeded sampled
    requests give exactly real torch's tokens, in a batch and alone in another engine configuration."""
    want, got = runs
    w, g = want["seeded"], got["seeded"]
    assert g[f"{model} batch"] == w[f"{model} batch"], f"{model}: layer {g} vs torch {w}"
    assert g[f"{model} alone"] == w[f"{model} alone"] == w[f"{model} batch"][1:2]
    assert len({tuple(t) for t in w[f"{model} batch"]}) == 3 and all(len(t) == 8 for t in w[f"{model} batch"])

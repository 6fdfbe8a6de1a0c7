"""minisgl and the judge on the browser's torch: in a Python 3.12 venv with numpy 2.0.2, where `import torch` is the
layer and `import safetensors` the numpy reader (real torch is not importable there), the engine gives the same
greedy tokens as on real PyTorch in every CPU configuration, a seeded sampled request is reproducible whatever its
batch, and the judge gives every exercise the same verdict, test by test."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from browser_engine import CONFIGS, UNSUPPORTED, chunked_tokens, engine_tokens, sampled_tokens, verdicts
from browser_env import HERE, MISSING_PYTHON, ROOT, browser_python
from conftest import need

from judge.exercise import list_exercises

BROWSER_EXERCISES = [e.slug for e in list_exercises(ROOT / "exercises") if "browser" in e.modes]


@pytest.fixture(scope="module")
def runs():
    """(real torch's results, the layer's results): the layer's process runs while this one computes torch's."""
    need(browser_python() is not None, MISSING_PYTHON)
    from minisgl.testing import tiny_model

    tiny_model("qwen3"), tiny_model("llama")  # made here if missing: the browser's Python has no transformers
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.Popen([browser_python(), str(HERE / "run_engine.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        want = json.loads(json.dumps({"engine": engine_tokens(), "sampled": sampled_tokens(),
                                      "chunked": chunked_tokens(), "verdicts": verdicts()}))
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
    """The layer cannot draw torch's random numbers; what it keeps is what the engine promises: the same seed gives
    the same tokens, alone or beside other requests, graphs or not; another seed other tokens."""
    want, got = runs
    for side, res in (("torch", want), ("layer", got)):
        r = res["sampled"][f"graphs={graphs}"]
        assert r["alone"] == r["again"] == r["in_batch"], (side, r)
        assert r["other_seed"] != r["alone"], (side, r)
        assert len(r["alone"]) == 8
    key = f"graphs={graphs}"
    assert got["sampled"][key]["alone"] == got["sampled"]["graphs=False"]["alone"]
    assert got["sampled"][key]["greedy_in_batch"] == want["sampled"][key]["greedy_in_batch"]  # greedy beside samples


@pytest.mark.parametrize("slug", BROWSER_EXERCISES)
def test_judge_gives_the_same_verdicts_in_the_browser(runs, slug):
    want, got = runs
    w, g = want["verdicts"][slug], got["verdicts"][slug]
    assert sorted(g) == sorted(w)
    missing = sorted({m.split(UNSUPPORTED)[0].split()[-1] for v in g.values() for _, m in v["tests"].values()
                      if UNSUPPORTED in m})
    assert not missing, f"{slug}: the exercise uses torch functions the browser's layer lacks: {missing}"
    assert g["reference"]["status"] == "accepted", g["reference"]
    for name, v in g.items():
        if name == "starter" or name.startswith("mutants/"):
            assert v["status"] not in ("accepted", "internal_error"), (name, v)
        assert v["status"] == w[name]["status"], f"{slug} {name}: layer {v['status']} vs torch {w[name]['status']}"
        layer_tests = {t: s for t, (s, _) in v["tests"].items()}
        torch_tests = {t: s for t, (s, _) in w[name]["tests"].items()}
        assert layer_tests == torch_tests, f"{slug} {name}: per-test statuses differ: layer {v} torch {w[name]}"

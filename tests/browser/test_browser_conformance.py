"""The browser's torch layer against real PyTorch, case by case, on numpy 2.4 (here) and numpy 2.0.2 (Python 3.12,
the browser's numpy); and every public function of the layer has a case (a test proves a missing one is caught)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from tests.browser.browser_cases import CASES
from tests.browser.browser_conformance import differences, run_all, run_case, tolerance
from tests.browser.browser_env import LAYER, MISSING_PYTHON, browser_python, load_layer, run_browser_python
from tests.browser.browser_surface import EXCLUDED, coverage, surface, uncovered
from tests.support import need

NAMES = list(CASES)


def _plain(results: dict) -> dict:
    return json.loads(json.dumps(results))  # what a JSON round trip gives: both sides compare alike


@pytest.fixture(scope="module")
def want() -> dict:
    assert "site-packages" in torch.__file__, f"the oracle must be real PyTorch, not {torch.__file__}"
    return _plain(run_all(torch))


@pytest.fixture(scope="module")
def layer_here() -> dict:
    T = load_layer()
    assert os.path.realpath(T.__file__).startswith(str(LAYER)), T.__file__
    return _plain(run_all(T))


@pytest.fixture(scope="module")
def layer_browser_numpy() -> dict:
    need(browser_python() is not None, MISSING_PYTHON)
    out = run_browser_python("run_cases.py")
    assert out["numpy"] == "2.0.2" and out["python"].startswith("3.12"), out["numpy"]
    return out["results"]


def _check(name: str, want: dict, got: dict) -> None:
    w, g = want[name], got[name]
    assert not (isinstance(w, dict) and "case_error" in w), f"the case itself fails on real torch:\n{w['case_error']}"
    assert not (isinstance(g, dict) and "case_error" in g), f"the layer crashed:\n{g['case_error']}"
    diff = differences(w, g, tolerance(name))
    assert not diff, f"{name}: the layer differs from torch:\n" + "\n".join(diff)


@pytest.mark.parametrize("name", NAMES)
def test_layer_matches_torch(name, want, layer_here):
    """numpy of this machine (2.4)."""
    _check(name, want, layer_here)


@pytest.mark.parametrize("name", NAMES)
def test_layer_matches_torch_on_the_browser_numpy(name, want, layer_browser_numpy):
    """numpy 2.0.2 on Python 3.12, as in Pyodide 0.27.7."""
    _check(name, want, layer_browser_numpy)


def test_numpy_here_is_2_4():
    assert np.__version__.startswith("2.4"), np.__version__


@pytest.fixture(scope="module")
def per_case() -> dict:
    return coverage(load_layer, CASES, run_case)


def test_every_public_function_has_a_case(per_case):
    T = load_layer()
    names = surface(T)
    assert len(names) > 150, sorted(names)  # the enumeration itself works
    for expected in ("torch.cat", "torch.Tensor.view", "torch.Tensor.__setitem__", "torch.Tensor.shape",
                     "torch.nn.functional.scaled_dot_product_attention", "torch.cuda.is_available",
                     "torch.device.__enter__", "torch.Generator.manual_seed", "torch.Tensor.__radd__"):
        assert expected in names, expected
    missing = uncovered(T, per_case)
    assert not missing, f"public functions of the layer without a conformance case: {sorted(missing)}"
    assert set(EXCLUDED) <= set(names), "an exclusion names something the layer no longer has"


def test_a_missing_case_is_caught(per_case):
    """Remove the case that alone calls most names: the check (traced again, without it) reports them."""
    T = load_layer()
    others = {c: set().union(*(v for k, v in per_case.items() if k != c)) for c in per_case}
    victim = max(per_case, key=lambda c: len(per_case[c] - others[c]))
    alone = per_case[victim] - others[victim]
    assert alone, "no case calls anything no other case calls"
    fewer = {k: v for k, v in CASES.items() if k != victim}
    assert uncovered(T, coverage(load_layer, fewer, run_case)) == alone

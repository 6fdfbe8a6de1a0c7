"""The supervisor's grace rules for an interrupted test, against a scripted worker (tests/browser/supervisor_cases.mjs,
no Pyodide): an interrupt that reached Python, or a test whose end is on its way, is never answered with a restart;
a test that ignores the interrupt is stopped after one grace, or two once Python took it."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.browser.judge_browser import REPO
from tests.support import need

GRACE_MS = 1000  # long against timer jitter on a loaded machine: the bounds below are whole graces


@pytest.fixture(scope="module")
def cases() -> dict[str, dict]:
    need(shutil.which("node") is not None, "node is not installed")
    out = subprocess.run(["node", str(REPO / "tests/browser/supervisor_cases.mjs"), str(GRACE_MS)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return {c["case"]: c for c in map(json.loads, out.splitlines())}


@pytest.mark.parametrize("name", ["prompt", "slow_unwind", "message_in_flight", "starved"])
def test_an_interrupted_test_that_ends_is_not_restarted(cases, name):
    c = cases[name]
    assert c["restarted"] is False, c
    assert c["tests"] == [["test_loop", "timeout"], ["test_after", "pass"]], "the run went on after it"


def test_a_test_that_swallows_the_interrupt_is_stopped_after_two_graces(cases):
    c = cases["swallowed"]
    assert c["restarted"] is True and c["status"] == "timeout", c
    assert c["tests"] == [["test_loop", "timeout"], ["test_after", "skip"]]
    assert 2 * GRACE_MS <= c["ms"] < 3 * GRACE_MS, c["ms"]


def test_an_interrupt_python_never_takes_is_stopped_after_one_grace(cases):
    c = cases["never_taken"]
    assert c["restarted"] is True and c["status"] == "timeout", c
    assert GRACE_MS <= c["ms"] < 2 * GRACE_MS, c["ms"]

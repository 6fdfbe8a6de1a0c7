"""The hostile suite: every submission of tests/hostile_cases.py judged in local and in trusted mode.

In trusted mode none is accepted and none is an internal error; in local mode each gets its expected
status, never an internal error; after each, nothing it started is still running; after each resource
abuse, a correct submission is accepted at once.

The cases that neither exhaust a resource nor leave processes behind are judged in one sequence per mode
(one ``judge_isolated``, one ``judge_trusted`` call, as ``check`` and a warm judge do), followed by a correct
submission: each must get its own verdict whatever the judgings before it did to their child.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from judge.exercise import load_exercise
from judge.isolation import Judging, Limits, judge_isolated
from judge.trusted import judge_trusted
from tests.hostile_cases import CASES, TAG

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "fixtures" / "hostile"

EXERCISE = load_exercise(HOSTILE / "exercises" / "hostile-bs-list")
GOOD = (HOSTILE / "good.py").read_text()
LIMITS = Limits(run_s=25, test_s=2)  # a test of hostile-bs-list takes milliseconds: 2 s is a loop


def local(source: str, filename: str = "submission.py"):
    """The verdict of ``source`` judged in local mode (the isolated layer)."""
    return judge_isolated([Judging(EXERCISE, source, filename=filename)], limits=LIMITS)[0].verdict


def trusted(source: str, filename: str = "submission.py"):
    """The verdict of ``source`` judged in trusted mode (the trusted layer)."""
    return judge_trusted([Judging(EXERCISE, source, filename=filename)], limits=LIMITS)[0]


def leftovers() -> list[str]:
    """Processes the submissions started (their command line carries TAG), still running."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if TAG in cmd and "pytest" not in cmd:
            found.append(f"{pid}: {cmd[:80]}")
    return found


def test_the_suite_is_big_enough():
    kinds = {c.kind for c in CASES}
    assert len(CASES) >= 40 and {"resources", "leftovers", "forgery", "patching", "theft", "outside",
                                 "network", "blame"} <= kinds
    assert len({c.name for c in CASES}) == len(CASES)


ALONE = [c for c in CASES if c.kind in ("resources", "leftovers") or c.env]
IN_SEQUENCE = [c for c in CASES if c not in ALONE]


@pytest.fixture(scope="module")
def judged_in_sequence():
    """Every IN_SEQUENCE case and then GOOD, judged one after another: {name: (local, trusted)}, and the
    processes still running after each mode's sequence."""
    judgings = [Judging(EXERCISE, c.source, filename=f"{c.name}.py") for c in IN_SEQUENCE] + [Judging(EXERCISE, GOOD)]
    lv = [o.verdict for o in judge_isolated(judgings, limits=LIMITS)]
    left_local = leftovers()
    tv = judge_trusted(judgings, limits=LIMITS)
    return {c.name: pair for c, pair in zip(IN_SEQUENCE + [None], zip(lv, tv)) if c}, (lv[-1], tv[-1]), \
        left_local + leftovers()


def test_the_sequence_leaves_nothing_running_and_ends_accepted(judged_in_sequence):
    _, (good_local, good_trusted), left = judged_in_sequence
    assert left == [], "a process a submission started outlived its verdict"
    assert good_local.status == "accepted" and good_trusted.status == "accepted"


@pytest.mark.parametrize("case", IN_SEQUENCE, ids=[c.name for c in IN_SEQUENCE])
def test_hostile_submission_in_sequence(case, judged_in_sequence):
    lv, tv = judged_in_sequence[0][case.name]
    assert lv.status in case.local and lv.status != "internal_error", f"local: {lv.status}: {lv.message[:500]} " \
        f"{[(t.name, t.status, t.message[:200]) for t in lv.tests]}"
    assert tv.status in case.trusted, f"trusted: {tv.status}: {tv.message[:500]} " \
        f"{[(t.name, t.status, t.message[:200]) for t in tv.tests]}"
    assert tv.status not in ("accepted", "internal_error") and tv.trust.level == "trusted"


@pytest.mark.parametrize("case", ALONE, ids=[c.name for c in ALONE])
def test_hostile_submission(case, monkeypatch):
    for k, v in (case.env or {}).items():
        monkeypatch.setenv(k, v)
    lv = local(case.source, f"{case.name}.py")
    assert lv.status in case.local, f"local: {lv.status}: {lv.message[:500]} " \
        f"{[(t.name, t.status, t.message[:200]) for t in lv.tests]}"
    assert lv.status != "internal_error"
    assert leftovers() == [], "a process the submission started outlived its verdict (local mode)"
    tv = trusted(case.source, f"{case.name}.py")
    assert tv.status in case.trusted, f"trusted: {tv.status}: {tv.message[:500]} " \
        f"{[(t.name, t.status, t.message[:200]) for t in tv.tests]}"
    assert tv.status not in ("accepted", "internal_error") and tv.trust.level == "trusted"
    assert leftovers() == [], "a process the submission started outlived its verdict (trusted mode)"
    if case.kind == "resources":
        assert local(GOOD).status == "accepted"
        assert trusted(GOOD).status == "accepted"


def test_a_correct_submission_is_accepted_in_both_modes():
    for judge in (local, trusted):
        v = judge(GOOD)
        assert v.status == "accepted", (judge.__name__, v.message, [(t.name, t.status, t.message) for t in v.tests])

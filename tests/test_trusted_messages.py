"""A trusted verdict's failure messages read as local judging's: a check that failed in the learner's process is
described with the message that process built (its f-string fields filled), and a check the referee decides (an
expected value the learner's process never saw) gets the message's plain fields from that process's values; where
the learner's path left the reference's before a hidden check, that check is described, and the path after it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judge.checks import Observation, fill_template
from judge.exercise import load_exercise
from judge.isolation import Judging, judge_isolated
from judge.trusted import judge_trusted

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("slug, least", [("cache-allocate", 20), ("sampling-params-validate", 20),
                                         ("weight-parts", 20)])
def test_failed_checks_say_in_trusted_mode_what_they_say_locally(slug, least):
    """cache-allocate's messages show expressions ({k * p + 1}), lists ({states}) and attributes ({q.uid});
    sampling-params-validate's mutants take another path through a helper's asserts before a hidden check;
    weight-parts' hidden checks show a config's attributes ({c.num_layers})."""
    e = load_exercise(ROOT / "exercises" / slug)
    judgings = [Judging(e, p.read_text(), f"mutants/{p.name}", "local", seed=7) for p in e.mutant_paths]
    local = [o.verdict for o in judge_isolated(judgings)]
    trusted = judge_trusted(judgings)
    compared = 0
    for j, here, there in zip(judgings, local, trusted, strict=True):
        assert here.status == there.status, j.filename
        mine = {t.name: t for t in here.tests}
        for t in there.tests:
            if t.status == "fail" and mine[t.name].status == "fail":
                compared += 1
                first = t.message.splitlines()[0]
                assert first == mine[t.name].message.splitlines()[0], f"{j.filename} {t.name}: {first}"
                assert not re.search(r"\{[A-Za-z_]", first), f"{j.filename} {t.name}: a field left unfilled: {first}"
    assert compared >= least


def test_the_referees_fields_are_filled_from_plain_values_only():
    template = "{field}={value!r} at {x:.2f} of {n}: {a.b} {missing} {rows}"
    names = {"field": "top_k", "value": "a", "x": 1.23456, "n": 3, "rows": [1, 2]}
    assert fill_template(template, names) == "top_k='a' at 1.23 of 3: {a.b} {missing} [1, 2]"
    wire = Observation("t", 0, 3, "==", 1, 2, {}, None, names={"n": 3, "rows": [1, 2], "d": {"k": 1.5}}).to_wire()
    wire["names"].update({"huge": "x" * 10_000, "deep": [[1]], "many": list(range(100)), "odd": {"opaque": "Evil"}})
    got = Observation.from_wire(wire).names
    assert got == {"n": 3, "rows": [1, 2], "d": {"k": 1.5}}, "only small plain values cross to the referee"
    said = Observation.from_wire({**wire, "names": {}, "said": "y" * 10_000}).said
    assert len(said) == 2000, "a failed check's message from the learner's process is capped"



def test_judged_to_the_first_failure_a_trusted_verdict_stops_where_the_local_one_does():
    """check --trusted judges a mutant in trusted mode up to its first test that does not pass (the referee stops
    there too) and compares that test with local mode's (judge.validate.stopped_otherwise)."""
    from dataclasses import replace

    from judge.validate import stopped_otherwise

    e = load_exercise(ROOT / "exercises" / "sampling-params-validate")
    judgings = [Judging(e, p.read_text(), f"mutants/{p.name}", "local", seed=7) for p in e.mutant_paths]
    local = [o.verdict for o in judge_isolated(judgings)]
    short = judge_trusted([replace(j, first_failure=True) for j in judgings])
    cut = 0
    for j, here, there in zip(judgings, local, short, strict=True):
        assert stopped_otherwise(there, here) == "", j.filename
        n = next(i for i, t in enumerate(here.tests) if t.status not in ("pass", "skip")) + 1
        assert [(t.name, t.status) for t in there.tests] == [(t.name, t.status) for t in here.tests[:n]], j.filename
        cut += len(here.tests) > n
    assert cut >= 3, "most mutants fail before the last test: stopping there is what the mode saves"
    # what it tells apart: a test that fails otherwise, a test the referee let pass, an accepted or broken judging
    there, here = short[0], local[0]
    bad = next(t for t in there.tests if t.status != "pass")
    other = "error" if bad.status != "error" else "timeout"
    assert stopped_otherwise(replace(there, tests=[*there.tests[:-1], replace(bad, status=other)]), here)
    passed = [replace(t, status="pass") if t.name == bad.name else t for t in here.tests]
    assert bad.status == "fail" and stopped_otherwise(there, replace(here, tests=passed)) == ""
    assert stopped_otherwise(replace(there, tests=[], status="runtime_error"), here), "no test, another status"
    assert stopped_otherwise(replace(there, tests=[]), replace(here, tests=[])) == "", "no test, the same status"
    assert stopped_otherwise(replace(there, tests=[], status="accepted"), here)
    assert stopped_otherwise(replace(there, tests=[], status="internal_error"), here)

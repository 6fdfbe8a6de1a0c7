"""tools/mutation.py: mutmut's mutants of each exercise's reference, judged by the judge (``make mutation``).

The whole run takes minutes and is not part of ``make test``; here: the mutants it makes, the equivalent lists
against today's references, the committed report, and one small exercise judged for real (a killed mutant listed
as equivalent is reported; a score below the minimum fails).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from judge.exercise import list_exercises, load_exercise

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import mutation  # noqa: E402  (tools/mutation.py)

EXERCISES = list_exercises(ROOT / "exercises")

SOURCE = '''
import torch


class Counter:
    def bump(self, n: int) -> int:
        """Docstrings are not mutated."""
        if n < 0:
            raise ValueError("n must be >= 0")
        self.total = self.total + n
        return self.total
'''


def test_mutants_are_one_change_each_with_stable_unique_ids():
    got = mutation.mutants_of(SOURCE)
    ids = [m.id for m in got]
    assert len(ids) == len(set(ids)), "each mutant has its own id"
    assert "Counter.bump: `if n < 0:` -> `if n <= 0:`" in ids
    assert "Counter.bump: `self.total = self.total + n` -> `self.total = self.total - n`" in ids
    assert not any("Docstrings" in i for i in ids)
    for m in got:
        assert m.source != SOURCE
        compile(m.source, "mutant.py", "exec")
        changed = [a for a, b in zip(SOURCE.splitlines(), m.source.splitlines()) if a != b]
        assert len(changed) <= 2, f"{m.id} changes more than one place: {changed}"
    assert mutation.mutants_of(SOURCE) == got, "the same source makes the same mutants, in the same order"


@pytest.mark.parametrize("e", EXERCISES, ids=lambda e: e.slug)
def test_equivalent_lists_name_todays_mutants_with_a_reason(e):
    from judge.solution import reference_source

    listed = mutation.equivalents(e)
    ids = {m.id for m in mutation.mutants_of(reference_source(e))}
    stale = [mid for mid in listed if mid not in ids]
    assert not stale, f"{e.slug}/{mutation.EQUIVALENT_FILE} names mutants the reference no longer makes: {stale}"
    short = [mid for mid, why in listed.items() if len(why) < 20]
    assert not short, f"say why each is equivalent (a sentence): {short}"


def test_the_committed_report_covers_every_exercise_at_the_minimum_score():
    report = (ROOT / "docs" / "mutation-report.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| ([a-z0-9-]+) \|.*\| ([0-9.]+) % \|$", report, re.M))
    assert sorted(rows) == sorted(e.slug for e in EXERCISES), "run `make mutation` after adding an exercise"
    low = {slug: score for slug, score in rows.items() if float(score) < 100 * mutation.MIN_SCORE}
    assert not low, f"exercises below {100 * mutation.MIN_SCORE:.0f} %: {low}"


def test_a_real_run_kills_and_reports_an_equivalent_that_is_killed(tmp_path):
    src = ROOT / "exercises" / "req-lengths"
    copy = tmp_path / "req-lengths"
    shutil.copytree(src, copy)
    shutil.copy(ROOT / "exercises" / "chapters.toml", tmp_path / "chapters.toml")
    _, mutants = mutation.make(load_exercise(copy))
    killed = next(m for m in mutants if "-=" in m.id)
    (copy / mutation.EQUIVALENT_FILE).write_text(
        f'[[equivalent]]\nmutant = "{killed.id}"\nwhy = "planted: this one is killed by the tests"\n')
    r = mutation.run_exercise(load_exercise(copy), seeds=[7])
    assert len(r.mutants) == len(mutants) and r.killed == len(mutants), [m.id for m in r.survivors]
    assert r.score == 1.0
    assert any("kill" in p and killed.id in p for p in r.problems), r.problems


def test_gpu_only_mutants_count_as_not_killed():
    e = EXERCISES[0]
    made = [mutation.Mutant(id=f"m{i}", source="") for i in range(20)]
    r = mutation.Result(exercise=e, mutants=made, survivors=made[:2],
                        equivalent={"m0": "the same results: nothing the statement promises tells them apart",
                                    "m1": mutation.GPU_MARK + "only a CUDA device tells them apart"})
    assert (r.killed, r.gpu_only) == (18, 1)
    assert r.score == 18 / 19, "a GPU-only mutant is not killed here: it stays in the denominator"


def test_gpu_mode_needs_a_gpu(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: --mode gpu runs")
    assert mutation.main(["--mode", "gpu", "fi-metadata"]) == 2
    assert "--mode gpu needs a CUDA GPU" in capsys.readouterr().err

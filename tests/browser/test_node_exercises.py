"""Every browser exercise in Pyodide through the Node runner: the reference and the alternative solutions accepted,
the starter and every mutant rejected, each with the per-test statuses that `practice/judge.py test` gives locally
on real PyTorch, with the same seed."""

from __future__ import annotations

import judge_browser
from judge_browser import compare_with_local


def test_every_exercise_judges_as_locally():
    jobs, local = judge_browser.local_verdicts()
    problems = compare_with_local(jobs, local, judge_browser.node_verdicts())
    assert not problems, "\n".join(problems)
    assert len({slug for slug, *_ in jobs}) >= 5

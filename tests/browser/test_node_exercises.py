"""Every browser exercise in Pyodide through the Node runner: the reference accepted, the starter and every mutant
rejected, each with the per-test statuses that `practice/judge.py test` gives locally on real PyTorch."""

from __future__ import annotations

import judge_browser
from judge_browser import compare_with_local

from judge.node_runner import NodeJob, judge_in_node


def test_every_exercise_judges_as_locally():
    site = judge_browser.site()
    jobs, local = judge_browser.local_verdicts()
    seed = judge_browser.judge_seed()
    browser = judge_in_node([NodeJob(slug, src, name, run, seed) for slug, _, src, name, run in jobs], site=site)
    problems = compare_with_local(jobs, local, browser)
    assert not problems, "\n".join(problems)
    assert len({slug for slug, *_ in jobs}) >= 5

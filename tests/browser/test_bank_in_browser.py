"""Every browser exercise in Pyodide, in the Node runner and in headless Chromium (the page's client API against
the Flask site): the reference and the alternative solutions accepted, the starter and every mutant rejected, each
with the per-test statuses that `practice/judge.py test` gives locally on real PyTorch, with the same seed. One file,
so that one process judges the bank locally once for both comparisons."""

from __future__ import annotations

import shutil
import subprocess
import sys

import judge_browser
from judge_browser import REPO, compare_with_local, serve

from judge.exercise import find_exercise
from judge.reference import reference_source
from judge.verdict import Verdict

JUDGE = "([slug, src, opts]) => window.judge.judge(slug, src, opts)"


def test_every_exercise_judges_as_locally():
    jobs, local = judge_browser.local_verdicts()
    problems = compare_with_local(jobs, local, judge_browser.node_verdicts())
    assert not problems, "\n".join(problems)
    assert len({slug for slug, *_ in jobs}) >= 5


def test_check_browser_flags_a_mutant_that_passes(tmp_path):
    """`practice/judge.py check --browser` on a copy of an exercise with one planted "mutant" that is in fact the
    reference: that mutant, and only it, is reported."""
    judge_browser.need_layer()
    judge_browser.site()
    root = tmp_path / "exercises"
    root.mkdir()
    shutil.copyfile(judge_browser.REPO / "exercises" / "chapters.toml", root / "chapters.toml")
    shutil.copytree(judge_browser.REPO / "exercises" / "graph-bs-list", root / "graph-bs-list")
    (root / "graph-bs-list" / "mutants" / "zz_planted.py").write_text(reference_source(find_exercise("graph-bs-list")))
    proc = subprocess.run([sys.executable, "practice/judge.py", "--exercises", str(root), "check", "--browser"],
                          cwd=judge_browser.REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    problems = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("- ")]
    assert problems == ["     - [browser] mutants/zz_planted.py is accepted (it must fail, and not with an internal "
                        "error)"], proc.stdout


def test_every_exercise_judges_as_locally_in_chromium(chromium_browser):
    site = judge_browser.site()
    jobs, local = judge_browser.local_verdicts()
    judge_seed = judge_browser.judge_seed()
    with serve(site, REPO / "exercises") as base:
        context = chromium_browser.new_context()
        page = context.new_page()
        page.set_default_timeout(240_000)
        page.goto(base + "/judge/")
        ready = page.evaluate("() => window.judge.ready.then((r) => r, (e) => ({error: e.message}))")
        assert "error" not in ready, ready
        browser = []
        for slug, _, src, name, run in jobs:
            r = page.evaluate(JUDGE, [slug, src, {"run": run, "seed": judge_seed, "filename": name}])
            assert not r["restarted"], f"{slug} {name}: the worker was restarted"
            browser.append(Verdict.from_dict(r["verdict"]))
        assert page.evaluate("window.judge.restarts") == 0
        context.close()
    problems = compare_with_local(jobs, local, browser)
    assert not problems, "\n".join(problems)

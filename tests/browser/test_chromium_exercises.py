"""Every browser exercise in headless Chromium, through the page's client API against the Flask site: the
reference accepted, the starter and every mutant rejected, with the per-test statuses of `practice/judge.py test`."""

from __future__ import annotations

import judge_browser
from judge_browser import REPO, compare_with_local, serve

from judge.verdict import Verdict

JUDGE = "([slug, src, opts]) => window.judge.judge(slug, src, opts)"


def test_every_exercise_judges_as_locally_in_chromium():
    site = judge_browser.site()
    jobs, local = judge_browser.local_verdicts()
    judge_seed = judge_browser.judge_seed()
    with judge_browser.chromium() as chromium, serve(site, REPO / "exercises") as base:
        context = chromium.new_context()
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

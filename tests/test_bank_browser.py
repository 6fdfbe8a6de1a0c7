"""The bank judged in the browser gives the per-test statuses of the same files judged locally (one seed for all).

CI's share, for every exercise that lists ``browser``: the Node runner (Pyodide under Node) judges the reference by
Run, every alternative solution, the starter and two of the mutants; headless Chromium (the page's client API
against the Flask site: a Web Worker, the assets fetched and checked over HTTP) judges the reference by Submit and
a third mutant. The mutants are a sample fixed by their names (``sample``), so a run is reproducible and every
exercise shows three of its mistakes in the browser. Each of those files is judged locally under the same seed.

Every file of every browser exercise is compared by ``make check`` (``practice/judge.py check --browser``), about
25 minutes on 2 cores: run it after changing the browser's torch layer or an exercise's tests.

A file of its own, so that ``make test`` runs it beside ``tests/test_bank.py`` (the local validation) on the other
worker.
"""

from __future__ import annotations

import functools
import hashlib

from judge.exercise import list_exercises
from judge.isolation import Judging, judge_isolated
from judge.verdict import Verdict
from tests.browser import judge_browser
from tests.browser.judge_browser import REPO, compare_with_local, serve

JUDGE = "([slug, src, opts]) => window.judge.judge(slug, src, opts)"
NODE_MUTANTS = 2  # per exercise, judged by the Node runner; one more by Chromium


def sample(jobs) -> dict[str, list[tuple]]:
    """Each exercise's mutant jobs in a fixed order (by a hash of the exercise and the file name): the first
    NODE_MUTANTS go to the Node runner, the next one to Chromium."""
    out: dict[str, list[tuple]] = {}
    for job in jobs:
        if job[1].startswith("mutants/"):
            out.setdefault(job[0], []).append(job)
    for mutants in out.values():
        mutants.sort(key=lambda j: hashlib.sha256(f"{j[0]}/{j[3]}".encode()).hexdigest())
    return out


def node_jobs(every) -> list[tuple]:
    mutants = sample(every)
    chosen = {id(j) for ms in mutants.values() for j in ms[:NODE_MUTANTS]}
    return [j for j in every if (j[1] != "reference" and not j[1].startswith("mutants/")) or id(j) in chosen]


def page_jobs(every) -> list[tuple]:
    mutants = sample(every)
    chosen = {id(ms[NODE_MUTANTS]) for ms in mutants.values() if len(ms) > NODE_MUTANTS}
    return [j for j in every if j[1] == "reference" or id(j) in chosen]


@functools.cache
def _exercises():
    return {e.slug: e for e in list_exercises(REPO / "exercises")}


def local_verdicts(jobs) -> list[Verdict]:
    """Each job judged locally (the isolated layer), under the comparisons' seed."""
    seed = judge_browser.judge_seed()
    judgings = [Judging(_exercises()[slug], src, name, "local", run, seed=seed) for slug, _, src, name, run in jobs]
    return [o.verdict for o in judge_isolated(judgings)]


def test_the_samples_cover_every_browser_exercise():
    every = judge_browser.check_jobs()
    node, page = node_jobs(every), page_jobs(every)
    slugs = {j[0] for j in every}
    assert len(slugs) >= 5
    for slug in slugs:
        n = [j[1] for j in node if j[0] == slug]
        p = [j[1] for j in page if j[0] == slug]
        assert "reference --run" in n and "starter" in n and p[0] == "reference", slug
        assert sum(x.startswith("mutants/") for x in n) == NODE_MUTANTS and len(p) == 2, (slug, n, p)
        assert not set(n) & set(p), f"{slug}: Node and Chromium judge different files"
        alternatives = [j[1] for j in every if j[0] == slug and j[1].startswith("alternative")]
        assert alternatives and set(alternatives) <= set(n), slug
    assert node_jobs(every) == node, "the sample is fixed"


def test_the_bank_judges_as_locally_in_node():
    jobs = node_jobs(judge_browser.check_jobs())
    problems = compare_with_local(jobs, local_verdicts(jobs), judge_browser.node_verdicts(jobs))
    assert not problems, "\n".join(problems)


def test_the_bank_judges_as_locally_in_chromium(chromium_browser):
    judge_browser.need_layer()
    site = judge_browser.site()
    jobs, seed = page_jobs(judge_browser.check_jobs()), judge_browser.judge_seed()
    with serve(site, REPO / "exercises") as base:
        context = chromium_browser.new_context()
        page = context.new_page()
        page.set_default_timeout(240_000)
        page.goto(base + "/judge/")
        ready = page.evaluate("() => window.judge.ready.then((r) => r, (e) => ({error: e.message}))")
        assert "error" not in ready, ready
        browser = []
        for slug, _, src, name, run in jobs:
            r = page.evaluate(JUDGE, [slug, src, {"run": run, "seed": seed, "filename": name}])
            assert not r["restarted"], f"{slug} {name}: the worker was restarted"
            browser.append(Verdict.from_dict(r["verdict"]))
        assert page.evaluate("window.judge.restarts") == 0
        context.close()
    problems = compare_with_local(jobs, local_verdicts(jobs), browser)
    assert not problems, "\n".join(problems)

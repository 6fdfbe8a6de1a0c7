"""The exercise bank, judged once locally for every promise made about it.

- Every exercise is valid as ``practice/judge.py check --trusted`` says (``judge.validate.check_exercise``): the
  reference accepted (Submit and Run), every alternative solution accepted, the starter and every mutant not (each
  mutant under SEEDS seeds), each file with the same verdict in trusted mode, every verdict matching the JSON
  Schema, and every mutant caught by a test that says what is wrong (not only by the end-to-end token tests).
- Every browser exercise judged in Pyodide by the Node runner (every file) and in headless Chromium (the page's
  client API against the Flask site: the reference and a mutant of each) gives the per-test statuses of those same
  local verdicts: one seed for all of them.

One file, so that one test process judges the bank locally once for all of it (tests/conftest.py schedules it
first: it is the longest).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from judge.exercise import list_exercises
from judge.promises import END_TO_END
from judge.validate import MIN_MUTANTS, alternatives, check_exercise
from judge.verdict import Verdict
from tests.browser import judge_browser
from tests.browser.judge_browser import REPO, compare_with_local, serve

ROOT = Path(__file__).resolve().parent.parent

EXERCISES = {e.slug: e for e in list_exercises(ROOT / "exercises")}
SCHEMA = json.loads((ROOT / "judge" / "verdict.schema.json").read_text())
# the end-to-end tests (run the engine, compare its tokens): docs/judge.md, "For maintainers", names them so
CUDA_GRAPH = ["graph-bs-list", "graph-capture-buffer", "graph-pad-and-replay", "torch-backend-graph-hooks",
              "graph-capture-loop"]
JUDGE = "([slug, src, opts]) => window.judge.judge(slug, src, opts)"


# CI's share of check's seeds: every mutant rejected under the bank's seed and 2 more (about 70 s of the suite);
# `make check` judges each under all of check's 10 (MUTANT_SEEDS), about 4 minutes on 2 cores
SEEDS = 3


@functools.cache
def report(slug: str):
    return check_exercise(EXERCISES[slug], trusted=True, seed=judge_browser.judge_seed(), seeds=SEEDS)


def local_verdicts(jobs) -> list[Verdict]:
    """The validation's local verdict of each job of judge_browser.check_jobs()."""
    return [report(slug).verdicts[f"local {name}" + (" --run" if run else "")] for slug, _, _, name, run in jobs]


def test_the_bank():
    assert set(CUDA_GRAPH) <= set(EXERCISES)
    for e in EXERCISES.values():
        assert len(e.mutant_paths) >= MIN_MUTANTS, e.slug
        assert alternatives(e), f"{e.slug}: no alternative solution in exercises/<slug>/alternatives/"
        assert "local" in e.modes, f"{e.slug}: every exercise can be judged locally"


@pytest.mark.parametrize("slug", sorted(EXERCISES))
def test_exercise_is_valid(slug):
    r = report(slug)
    assert not r.problems, "\n".join(r.problems)
    ref, run = r.verdicts["local reference.py"], r.verdicts["local reference.py --run"]
    assert ref.passed >= 1 and run.total < ref.total, "Run runs only the visible examples"
    for name, v in r.verdicts.items():
        if "mutants/" in name or "starter" in name:
            assert v.failed >= 1, name
        if name.startswith("local mutants/"):  # caught by a test that says what is wrong, not only by the tokens
            said = [t.name for t in v.tests if t.status != "pass" and t.message and not END_TO_END.search(t.name)]
            assert said, f"{name} fails only end-to-end token tests: {[(t.name, t.status) for t in v.tests]}"
        data = json.loads(v.to_json())
        import jsonschema

        jsonschema.validate(data, SCHEMA)
        assert data["passed"] + data["failed"] + data["skipped"] == data["total"] == len(data["tests"]), name
        assert data["trust"]["level"] == ("trusted" if name.startswith("trusted") else "local"), name


def test_schema_rejects_a_malformed_verdict():
    import jsonschema

    data = json.loads(report("graph-bs-list").verdicts["local reference.py"].to_json())
    for bad in ({**data, "status": "ok"}, {k: v for k, v in data.items() if k != "env"},
                {**data, "tests": [{**data["tests"][0], "status": "passed"}]}, {**data, "version": 1},
                {**data, "trust": {"level": "total", "measures": []}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def test_classic_mistakes_are_each_caught():
    """A copy left out, a rebound buffer, padding to the wrong size, returning padded logits."""
    cases = {
        ("graph-capture-buffer", "mutants/forgot_positions.py"): "test_engine_same_tokens_with_graphs",
        ("graph-capture-buffer", "mutants/rebinds_out_loc.py"): "test_copy_from_writes_in_place",
        ("graph-pad-and-replay", "mutants/pad_to_largest.py"): "test_pad_to_the_nearest_size",
        ("graph-pad-and-replay", "mutants/returns_padded_logits.py"): "test_replay_returns_only_the_real_rows",
        ("torch-backend-graph-hooks", "mutants/forgot_seq_lens.py"): "test_example_same_tokens_with_graphs",
        ("graph-capture-loop", "mutants/smallest_first.py"): "test_largest_first",
    }
    for (slug, name), test in cases.items():
        for where in ("local", "trusted local"):
            v = report(slug).verdicts[f"{where} {name}"]
            t = next(t for t in v.tests if t.name == test)
            assert t.status == "fail" and t.message, f"{where} {slug} {name}: {test} is {t.status}: {t.message}"


def test_gpu_tests_are_skipped_with_a_reason():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the @gpu tests run")
    for slug in CUDA_GRAPH:
        skipped = [t for t in report(slug).verdicts["local reference.py"].tests if t.status == "skip"]
        assert skipped and all("CUDA" in t.message for t in skipped), slug


def test_every_exercise_judges_as_locally_in_node():
    jobs = judge_browser.check_jobs()
    problems = compare_with_local(jobs, local_verdicts(jobs), judge_browser.node_verdicts(jobs))
    assert not problems, "\n".join(problems)
    assert len({slug for slug, *_ in jobs}) >= 5


def page_jobs(jobs):
    """What the page judges of each exercise: its reference (Submit and Run) and its first mutant. The Python that
    judges is the Node runner's, file for file (the test above runs every file there); the page adds its own host
    (a Web Worker, the assets fetched and checked over HTTP), which these exercise on every exercise."""
    out, mutant_of = [], set()
    for job in jobs:
        slug, label = job[0], job[1]
        if label.startswith("reference"):
            out.append(job)
        elif label.startswith("mutants/") and slug not in mutant_of:
            mutant_of.add(slug)
            out.append(job)
    return out


def test_every_exercise_judges_as_locally_in_chromium(chromium_browser):
    judge_browser.need_layer()
    site = judge_browser.site()
    every = judge_browser.check_jobs()
    jobs, seed = page_jobs(every), judge_browser.judge_seed()
    assert {j[0] for j in jobs} == {j[0] for j in every}
    assert sum(j[1].startswith("mutants/") for j in jobs) == len({j[0] for j in jobs}), "a mutant of each"
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

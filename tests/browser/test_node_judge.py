"""The judge in Pyodide through the Node runner, on the toy exercise (no torch needed): the worker's deadlines,
interrupts and restarts, and the verdict rules the supervisor shares with judge/verdict.py."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess

import pytest

from browser.node import NodeRun, run_node
from judge.verdict import TestResult, Verdict
from tests.browser.judge_browser import REPO, TOY, toy_sources

LIMIT_S = 2.0  # the test_time_limit of the copy of the toy exercise judged here (5 s in the toy)
SLACK_S = 2.0  # the bound: a looping test ends within its limit plus 2 s
# The supervisor's grace (its default is 3 s): longer here, so that a worker thread starved for seconds by the
# other tests on a loaded CI machine still unwinds an interrupt in place (the rule under test is the same)
GRACE_S = 6.0
ORDER = ["good", "loop_in_target", "good", "loop_at_module_level", "good", "os_exit", "good", "swallow_interrupt",
         "good"]


def statuses(v: Verdict) -> list[tuple[str, str]]:
    return [(t.name, t.status) for t in v.tests]


@pytest.fixture(scope="module")
def toy_copy(tmp_path_factory):
    """run_node's arguments for a copy of the toy exercises: toy-counter with a test time limit of LIMIT_S (every
    loop here runs into it), and toy-counter-fast, whose whole run may take 1.5 s."""
    ex = tmp_path_factory.mktemp("exercises")
    shutil.copytree(TOY / "exercises", ex, dirs_exist_ok=True)
    fast = ex / "toy-counter-fast"
    shutil.copytree(ex / "toy-counter", fast)
    toml = fast / "exercise.toml"
    toml.write_text(toml.read_text().replace("time_limit = 30", "time_limit = 1.5").replace(
        "test_time_limit = 5", "test_time_limit = 1"))
    toml = ex / "toy-counter" / "exercise.toml"
    toml.write_text(toml.read_text().replace("test_time_limit = 5", f"test_time_limit = {LIMIT_S:g}"))
    return {"mounts": [(str(ex), "/host-exercises")], "env": {"MINISGL_EXERCISES": "/host-exercises"}}


@pytest.fixture(scope="module")
def hostile_run(toy_site, toy_copy) -> tuple[NodeRun, list[dict]]:
    """One runner process. First a good submission to toy-counter-fast, queued before the worker is ready
    (Pyodide's boot alone takes longer than its run may); then ORDER on toy-counter."""
    src = toy_sources()
    jobs = [{"exercise": "toy-counter-fast", "source": src["good"], "seed": 7}]
    jobs += [{"exercise": "toy-counter", "source": src[k], "seed": 7} for k in ORDER]
    run = run_node(jobs, site=toy_site, progress=True, grace_ms=int(GRACE_S * 1000), **toy_copy)
    return run, jobs


def verdict(run: NodeRun, i: int) -> Verdict:
    """The verdict of ORDER[i] (job i + 1)."""
    return Verdict.from_dict(run.results[i + 1]["verdict"])


def test_deadlines_start_with_the_tests_not_while_pyodide_boots(hostile_run):
    run, _ = hostile_run
    assert run.ready["ms"] > 1500, "the boot was shorter than the run limit: this test proves nothing"
    v = Verdict.from_dict(run.results[0]["verdict"])
    assert v.status != "timeout" and any(t.status == "pass" for t in v.tests), v.to_dict()


def test_loading_reports_what_and_how_much(hostile_run, toy_site):
    run, _ = hostile_run
    boot = [p for p in run.progress if p.get("stage") == "boot"]
    manifest = json.loads((toy_site / "manifest.json").read_text())
    total = sum(manifest["files"][rel]["size"] for rel in manifest["boot"])
    first = boot[: next(i for i, p in enumerate(boot) if p["what"] == "ready") + 1]
    steps = ["pyodide.mjs", "runtime", "packages", "data", "imports", "ready"]
    assert [p["what"].split(":")[0] for p in first] == steps
    assert all(p["total"] == total for p in first)
    assert [p["loaded"] for p in first] == sorted(p["loaded"] for p in first) and first[-1]["loaded"] == total
    assert set(run.ready["env"]["timings"]) == {"pyodide.mjs", "runtime", "packages", "data", "imports"}
    tests = [p for p in run.progress if p.get("event") in ("load", "plan", "test_start", "test_end")]
    assert tests[0]["event"] == "load" and tests[0]["limits"] == {"test_s": 1.0, "run_s": 1.5}


def test_a_looping_test_is_interrupted_and_the_others_still_run(hostile_run):
    """Two tests loop: each interrupt must reach Python (a lost one was answered with a restart after two graces:
    tests/browser/test_interrupt_word.py)."""
    run, _ = hostile_run
    v = verdict(run, 1)
    by = {t.name: t for t in v.tests}
    assert v.status == "timeout" and run.results[2]["restarted"] is False, \
        f"interrupted in place, no restart: {v.message!r}, {[(t.name, t.status, t.ms) for t in v.tests]}"

    # scale loops forever: the two tests calling it time out, each within its limit + 2 s
    for name in ("test_example_scale", "test_from_import"):
        assert by[name].status == "timeout", by[name]
        assert (LIMIT_S - 0.1) * 1000 <= by[name].ms <= (LIMIT_S + SLACK_S) * 1000, by[name].ms
        assert "time limit" in by[name].message
    assert by["test_counter"].status == "pass", "the test after the interrupted ones ran"
    assert statuses(verdict(run, 2)) == statuses(verdict(run, 0)), "the next run works"


def test_a_loop_at_module_level_restarts_the_worker(hostile_run):
    run, _ = hostile_run
    msg = run.results[4]
    v = verdict(run, 3)
    assert msg["restarted"] is True and v.status == "timeout", v.message
    assert f"module-level code ran past the time limit of {LIMIT_S:g} s" in v.message
    assert msg["ms"] <= (LIMIT_S + SLACK_S) * 1000, msg["ms"]
    assert statuses(verdict(run, 4)) == statuses(verdict(run, 0)), "the restarted worker judges"


def test_os_exit_restarts_the_worker_with_a_runtime_error(hostile_run):
    run, _ = hostile_run
    v = verdict(run, 5)
    assert run.results[6]["restarted"] is True and v.status == "runtime_error", v.message
    assert "os._exit" in v.message and "exit(3)" in v.message
    first = v.tests[0]
    assert first.name == "test_example_scale" and first.status == "error", "the test that called it is blamed"
    assert all(t.status == "skip" for t in v.tests[1:]), "the rest did not run"
    assert statuses(verdict(run, 6)) == statuses(verdict(run, 0)), "the restarted worker judges"


def test_a_test_that_swallows_the_interrupt_is_stopped_after_two_graces(hostile_run):
    """Pyodide zeroes the interrupt word when Python takes the signal: the supervisor then allows a second grace for
    the KeyboardInterrupt to unwind, and a test that swallows it is stopped once that is over."""
    run, _ = hostile_run
    msg = run.results[8]
    v = verdict(run, 7)
    assert msg["restarted"] is True and v.status == "timeout", v.message
    first = v.tests[0]
    assert first.name == "test_example_scale" and first.status == "timeout", first
    assert f"ran past its time limit of {LIMIT_S:g} s" in first.message
    assert LIMIT_S + 2 * GRACE_S <= first.ms / 1000 <= LIMIT_S + 2 * GRACE_S + SLACK_S, first.ms
    assert all(t.status == "skip" for t in v.tests[1:]), "the rest did not run"
    assert statuses(verdict(run, 8)) == statuses(verdict(run, 0)), "the restarted worker judges"


def test_every_verdict_has_the_schema_and_says_advisory(hostile_run):
    import jsonschema

    schema = json.loads((REPO / "judge" / "verdict.schema.json").read_text())
    run, _ = hostile_run
    for msg in run.results:  # the worker's verdicts and those the supervisor built after a restart
        jsonschema.validate(msg["verdict"], schema)
        assert msg["verdict"]["trust"]["level"] == "advisory" and msg["verdict"]["mode"] == "browser"
        assert msg["verdict"]["seed"] == 7


def test_the_runner_in_node_judges_like_the_python_core(hostile_run):
    """The toy in Pyodide gets the per-test statuses of the same judge core on CPython (browser mode)."""
    from judge.exercise import find_exercise
    from judge.harness import judge_source

    want = judge_source(find_exercise("toy-counter", TOY / "exercises"), toy_sources()["good"], mode="browser",
                        seed=7)  # the toy engine is on the path: pyproject.toml's pythonpath
    run, _ = hostile_run
    got = verdict(run, 0)
    assert got.mode == "browser" and got.env.python.startswith("3.12")
    assert statuses(got) == statuses(want)


def test_js_finalize_is_verdict_finalize():
    """supervisor.mjs builds verdicts after a restart: its status rules are judge/verdict.py's, case by case."""
    cases = []
    for status in ("accepted", "timeout", "runtime_error", "internal_error", "compile_error"):
        for n in range(0, 3):
            for tests in itertools.product(("pass", "fail", "error", "skip", "timeout"), repeat=n):
                for run in (False, True):
                    cases.append({"status": status, "run": run, "tests": list(tests)})
    script = (
        "import { readFileSync } from 'node:fs';"
        "import { finalize } from './browser/js/supervisor.mjs';"
        "const cases = JSON.parse(readFileSync(0, 'utf8'));"
        "const out = cases.map((c) => finalize({status: c.status, mode: 'browser', run: c.run, message: '',"
        " tests: c.tests.map((s, i) => ({name: 't' + i, status: s}))}));"
        "process.stdout.write(JSON.stringify(out.map((v) => [v.status, v.passed, v.failed, v.skipped, v.total,"
        " v.message])));"
    )
    proc = subprocess.run(["node", "--input-type=module", "-e", script], input=json.dumps(cases), cwd=REPO,
                          capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout)
    for case, js in zip(cases, got):
        v = Verdict(status=case["status"], mode="browser", run=case["run"],
                    tests=[TestResult(name=f"t{i}", status=s) for i, s in enumerate(case["tests"])]).finalize()
        assert js == [v.status, v.passed, v.failed, v.skipped, v.total, v.message], case

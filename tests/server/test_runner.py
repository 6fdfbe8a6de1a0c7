"""The runner process: SIGTERM finishes the jobs in hand (a second one hands them back), a wrong token stops
it, one log line per job; and how a finished run becomes a verdict."""

from __future__ import annotations

import signal
import time

import pytest

from runner.executors import ContainerLimits, ContainerResult, interpret
from tests.server.pieces import World, wait_for


@pytest.fixture
def world(db_url, site_factory):
    w = World(db_url, site_factory, runners=1)
    yield w
    w.db.dispose()


def test_sigterm_finishes_the_job_in_hand_and_claims_no_more(world, tmp_path, monkeypatch):
    monkeypatch.setenv("SLEEPY_MIN", "3")
    monkeypatch.setenv("SLEEPY_MAX", "3")
    monkeypatch.setenv("SLEEPY_STARTED", str(tmp_path))
    a, b = world.submit("a = 1"), world.submit("b = 2")
    r = world.runner(0, tmp_path)
    wait_for(lambda: (tmp_path / str(a)).exists(), 30, "the runner to start judging")
    r.signal(signal.SIGTERM)
    assert r.wait(60) == 0
    rows = world.rows()
    assert (rows[a].state, rows[a].result) == ("done", "accepted")
    assert (rows[b].state, rows[b].attempts) == ("queued", 0)
    log = r.log_text()
    assert "SIGTERM: stopping; finishing 1 job(s)" in log and "runner stopped after 1 job(s)" in log
    assert log.count(f"job {a} exercise=graph-capture-loop mode=gpu attempt=1 slot=cpu0 -> accepted") == 1


def test_a_second_sigterm_hands_the_job_back(world, tmp_path, monkeypatch):
    monkeypatch.setenv("SLEEPY_MIN", "60")
    monkeypatch.setenv("SLEEPY_MAX", "60")
    monkeypatch.setenv("SLEEPY_STARTED", str(tmp_path))
    a = world.submit("a = 1")
    r = world.runner(0, tmp_path)
    wait_for(lambda: (tmp_path / str(a)).exists(), 30, "the runner to start judging")
    t0 = time.monotonic()
    r.signal(signal.SIGTERM)
    wait_for(lambda: "SIGTERM: stopping" in r.log_text(), 30, "the runner to take the first SIGTERM")
    r.signal(signal.SIGTERM)
    assert r.wait(30) == 0 and time.monotonic() - t0 < 20
    row = world.rows()[a]
    assert (row.state, row.attempts, row.lease_id) == ("queued", 0, None)
    assert f"job {a} handed back (cancelled)" in r.log_text()


def test_a_wrong_token_stops_the_runner_with_a_clear_message(world, tmp_path):
    world.runner_tokens[0] = "msr_not-a-real-token"
    r = world.runner(0, tmp_path)
    assert r.wait(30) == 3
    assert "refused this runner's token" in r.log_text()


JOB = {"id": 1, "exercise": "graph-capture-loop", "mode": "gpu", "run": False}
LIMITS = ContainerLimits(wall_s=90, memory_mb=2048, out_mb=16)


@pytest.mark.parametrize("res, status, words", [
    (ContainerResult(exit_code=None, timed_out=True), "timeout", "hard limit of 90 s"),
    (ContainerResult(exit_code=137, oom_killed=True), "runtime_error", "out of memory"),
    (ContainerResult(exit_code=None, out_overflow=True), "runtime_error", "more than 16 MB"),
    (ContainerResult(exit_code=1, log_tail="Traceback: boom"), "internal_error", "not your fault"),
    (ContainerResult(exit_code=0, files_out={"verdict.json": b"{not json"}), "internal_error", "not your fault"),
    (ContainerResult(exit_code=1, files_out={"verdict.json": b'{"status": "accepted"}'}), "internal_error", ""),
])
def test_a_run_without_a_good_verdict_file_is_classified(res, status, words):
    v = interpret(JOB, "local", res, LIMITS)
    assert v["status"] == status and words in v["message"] and v["passed"] == 0


def test_the_verdict_file_of_a_clean_exit_is_the_verdict():
    res = ContainerResult(exit_code=0, files_out={"verdict.json": b'{"status": "wrong_answer", "passed": 1}'})
    assert interpret(JOB, "local", res, LIMITS)["status"] == "wrong_answer"


def test_slots_one_per_gpu_or_cpu_slots():
    from runner.__main__ import make_slots

    assert [(s.name, s.gpu_id) for s in make_slots("none", 3)] == [("cpu0", None), ("cpu1", None), ("cpu2", None)]
    assert [(s.name, s.gpu_id) for s in make_slots("0,2", 1)] == [("gpu0", "0"), ("gpu2", "2")]

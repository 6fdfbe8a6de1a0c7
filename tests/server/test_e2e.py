"""End to end with the real pieces: the site under gunicorn on 127.0.0.1 (PostgreSQL started here, and
SQLite), runners as real processes (local executor; docker executor against a real daemon), learners
watching over Server-Sent Events. A CUDA Graph exercise: correct code accepted, wrong code wrong_answer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import requests

from tests.server.pieces import RunnerProc, mutant_code, reference_code, wait_for
from tests.server.sse import Stream, watch

EX = "graph-capture-loop"


def _submit(site, token, code, mode="gpu"):
    r = requests.post(f"{site.url}/api/v1/submissions", json={"exercise": EX, "code": code, "mode": mode},
                      headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert r.status_code == 201, r.text
    return r.json()


def _judge_two(site, token, runner_token, runner_args, executor="local", tmp_path=None):
    good = _submit(site, token, reference_code(EX))
    bad = _submit(site, token, mutant_code(EX, "no_warm_up"))
    assert (good["status"], good["position"], bad["position"]) == ("queued", 1, 2)  # no runner yet
    with ThreadPoolExecutor(2) as pool:  # both learners watch before the runner starts
        streams = [Stream(), Stream()]
        futures = [pool.submit(watch, f"{site.url}{s['links']['events']}", token, 240, stream)
                   for s, stream in zip((good, bad), streams, strict=True)]
        wait_for(lambda: all(st.events for st in streams), 30, "both watchers to see their submission queued")
        runner = RunnerProc(site.url, runner_token, executor=executor, args=runner_args,
                            log_path=tmp_path / "runner.log").start()
        try:
            streams = [f.result() for f in futures]
        finally:
            runner.signal(15)
            runner.wait(60)
    return good, bad, streams, runner


def _check(streams, runner, emulated=True):
    good, bad = streams
    assert [e.name for e in good.events][-2:] == ["running", "done"], [e.name for e in good.events]
    done = good.events[-1].data
    assert done["result"] == "accepted" and done["verdict"]["status"] == "accepted", done["verdict"]["message"]
    assert done["verdict"]["passed"] >= 6 and done["judged_on"]["emulated"] is emulated
    assert done["judged_on"]["device"] == "cpu"
    assert done["verdict"]["trust"]["level"] == "trusted"  # a referee outside the learner's process decided
    assert {"referee", "hidden-inputs", "screen", "no-reference"} <= set(done["verdict"]["trust"]["measures"])
    assert good.events[0].name == "queued" and good.events[0].data["position"] == 1
    seen_bad = [e.name for e in bad.events]
    # position 2, then 1, then its turn: a stream sends the states it sees, and the warm runner may judge the
    # wrong code (a fraction of a second) between two of its reads
    assert seen_bad[:2] == ["queued", "queued"] and seen_bad[2:] in (["running", "done"], ["done"]), seen_bad
    assert [e.data["position"] for e in bad.events[:2]] == [2, 1]
    assert seen_bad[-1] == "done" and bad.events[-1].data["result"] == "wrong_answer"
    failed = [t for t in bad.events[-1].data["verdict"]["tests"] if t["status"] == "fail"]
    assert failed and all(t["message"] for t in failed)
    log = runner.log_text()
    assert log.count(" -> accepted ") == 1 and log.count(" -> wrong_answer ") == 1, log


def test_local_runner_judges_correct_and_wrong_code(backend, db_url, site_factory, tmp_path):
    from tests.server.pieces import Accounts
    from web.db import open_database

    db = open_database(db_url)
    acc = Accounts(db)
    token, rtoken = acc.user("alice"), acc.runner("laptop")
    db.dispose()
    site = site_factory(db_url)
    args = ["--work-dir", str(tmp_path / "work")]
    _good, _bad, streams, runner = _judge_two(site, token, rtoken, args, tmp_path=tmp_path)
    _check(streams, runner)


def test_docker_runner_judges_correct_and_wrong_code_on_postgresql(pg, job_image, site_factory, tmp_path):
    from tests.server.pieces import Accounts, fresh_database
    from web.db import open_database

    url = fresh_database("postgresql", pg, tmp_path)
    db = open_database(url)
    acc = Accounts(db)
    token, rtoken = acc.user("alice"), acc.runner("gpu-host")
    db.dispose()
    site = site_factory(url)
    args = ["--image", job_image, "--work-dir", str(tmp_path / "work"), "--gpus", "none", "--emulate-gpu",
            "--name", "e2e-docker"]
    _good, _bad, streams, runner = _judge_two(site, token, rtoken, args, executor="docker", tmp_path=tmp_path)
    _check(streams, runner)
    assert "executor=docker" in runner.log_text()
    measures = set(streams[0].events[-1].data["verdict"]["trust"]["measures"])
    assert {"docker", "container-per-side", "no-reference-on-disk", "no-network"} <= measures


def test_practice_judge_submit_from_a_shell(site_factory, tmp_path):
    import os
    import subprocess
    import sys

    from tests.server.pieces import ROOT, Accounts, fresh_database
    from web.db import open_database

    db_url = fresh_database("sqlite", None, tmp_path)
    db = open_database(db_url)
    acc = Accounts(db)
    token, rtoken = acc.user("alice"), acc.runner("laptop")
    db.dispose()
    site = site_factory(db_url)
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(reference_code(EX))
    bad.write_text(mutant_code(EX, "no_warm_up"))
    runner = RunnerProc(site.url, rtoken, args=["--work-dir", str(tmp_path / "work")],
                        log_path=tmp_path / "runner.log").start()
    env = {**os.environ, "MINISGL_PRACTICE_TOKEN": token, "NO_COLOR": "1"}
    try:
        runs = [subprocess.run([sys.executable, "practice/judge.py", "submit", EX, str(f), "--server", site.url],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=240) for f in (good, bad)]
    finally:
        runner.signal(15)
        runner.wait(60)
    ok, wrong = runs
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ACCEPTED" in ok.stdout and "running on laptop" in ok.stderr and "emulated CUDA graphs" in ok.stdout
    assert wrong.returncode == 1 and "WRONG ANSWER" in wrong.stdout
    no_token = subprocess.run([sys.executable, "practice/judge.py", "submit", EX, str(good), "--server", site.url,
                               "--token", "msu_wrong"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert no_token.returncode == 2 and "HTTP 401" in no_token.stderr


def test_an_idle_event_stream_gets_heartbeats_and_sees_a_cancel(site_factory, tmp_path):
    import threading

    from tests.server.pieces import Accounts, fresh_database
    from web.db import open_database

    url = fresh_database("sqlite", None, tmp_path)
    db = open_database(url)
    token = Accounts(db).user("alice")
    db.dispose()
    site = site_factory(url, env={"MINISGL_PRACTICE_SSE_HEARTBEAT_SECONDS": "1"})
    sub = _submit(site, token, "x = 1")  # no runner: it stays queued
    stream = Stream()
    t = threading.Thread(target=watch, args=(f"{site.url}{sub['links']['events']}", token, 60, stream))
    t.start()
    wait_for(lambda: len(stream.heartbeats) >= 2, 10, "two heartbeats of the idle stream (one a second)")
    r = requests.post(f"{site.url}{sub['links']['cancel']}", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert r.json()["status"] == "cancelled"
    t.join(30)
    assert [e.name for e in stream.events] == ["queued", "cancelled"]
    assert stream.events[0].data["position"] == 1

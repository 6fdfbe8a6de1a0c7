"""The queue's transitions on both databases (SQLite and a real PostgreSQL), in-process."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time

import pytest
from sqlalchemy import select, update

from web.db import utcnow
from web.models import Submission
from web.queue import LeaseLost, Refused

VERDICT = {"status": "accepted", "tests": [{"name": "test_x", "status": "pass"}]}


def _user(accounts, grading, name="alice"):
    from web.auth import find_user

    accounts.user(name)
    return find_user(grading.db, name).id


def _runner(accounts, grading, name="r1"):
    from web.models import Runner

    accounts.runner(name)
    with grading.db.session() as s:
        return s.scalar(select(Runner.id).where(Runner.name == name))


def _expire(grading, sub_id):
    with grading.db.session() as s:
        s.execute(update(Submission).where(Submission.id == sub_id)
                  .values(lease_expires_at=utcnow() - dt.timedelta(seconds=1)))


def test_claim_takes_the_oldest_queued_job_of_a_mode_it_judges(grading, accounts):
    q = grading.queue
    uid, rid = _user(accounts, grading), _runner(accounts, grading)
    a = q.enqueue(uid, "graph-capture-loop", "cpu", "a = 1")
    b = q.enqueue(uid, "graph-capture-loop", "gpu", "b = 1")
    c = q.enqueue(uid, "graph-capture-loop", "gpu", "c = 1")
    with grading.db.session() as s:
        assert [q.position(s, s.get(Submission, i)) for i in (a.id, b.id, c.id)] == [1, 2, 3]
    job = q.claim(rid, ["gpu"])
    assert (job.id, job.code, job.attempt) == (b.id, "b = 1", 1)
    with grading.db.session() as s:
        assert q.position(s, s.get(Submission, c.id)) == 2  # a and c are left, a first
        sub = s.get(Submission, b.id)
        assert (sub.state, sub.runner_id, sub.lease_id) == ("running", rid, job.lease_id)
        assert sub.claimed_at is not None and sub.lease_expires_at > utcnow()
    assert q.claim(rid, ["cpu"]).id == a.id
    assert q.claim(rid, ["cpu"]) is None


def test_result_is_stored_once_and_a_stale_lease_is_refused(grading, accounts):
    q = grading.queue
    uid, rid = _user(accounts, grading), _runner(accounts, grading)
    sub = q.enqueue(uid, "graph-capture-loop", "gpu", "x = 1")
    job = q.claim(rid, ["gpu"])
    assert q.heartbeat(job.id, job.lease_id, rid) == q.config.lease_s
    assert q.store_result(job.id, job.lease_id, rid, VERDICT, {"gpu": "X"}) is True
    assert q.store_result(job.id, job.lease_id, rid, {**VERDICT, "status": "wrong_answer"}) is False  # ignored
    with grading.db.session() as s:
        row = s.get(Submission, sub.id)
        assert (row.state, row.result, json.loads(row.verdict)["status"]) == ("done", "accepted", "accepted")
        assert row.finished_at is not None
    with pytest.raises(LeaseLost) as e:
        q.store_result(job.id, "not-the-lease", rid, VERDICT)
    assert e.value.reason == "lease_expired"
    with pytest.raises(LeaseLost) as e:
        q.heartbeat(job.id, job.lease_id, rid)
    assert e.value.reason == "finished"


def test_an_expired_lease_goes_back_to_the_queue_and_the_old_runner_is_refused(grading, accounts):
    q = grading.queue
    uid = _user(accounts, grading)
    r1, r2 = _runner(accounts, grading, "r1"), _runner(accounts, grading, "r2")
    sub = q.enqueue(uid, "graph-capture-loop", "gpu", "x = 1")
    old = q.claim(r1, ["gpu"])
    _expire(grading, sub.id)
    with pytest.raises(LeaseLost):
        q.heartbeat(old.id, old.lease_id, r1)  # expired: no renewing it
    assert q.reap() == (1, 0)
    new = q.claim(r2, ["gpu"])
    assert new.id == sub.id and new.lease_id != old.lease_id and new.attempt == 2
    with pytest.raises(LeaseLost):
        q.store_result(old.id, old.lease_id, r1, VERDICT)
    assert q.store_result(new.id, new.lease_id, r2, VERDICT) is True


def test_a_late_result_with_the_current_lease_is_taken_before_the_reaper_runs(grading, accounts):
    q = grading.queue
    uid, rid = _user(accounts, grading), _runner(accounts, grading)
    sub = q.enqueue(uid, "graph-capture-loop", "gpu", "x = 1")
    job = q.claim(rid, ["gpu"])
    _expire(grading, sub.id)
    assert q.store_result(job.id, job.lease_id, rid, VERDICT) is True
    assert q.reap() == (0, 0)


def test_after_max_attempts_the_job_ends_as_internal_error(grading, accounts):
    q = grading.queue
    uid, rid = _user(accounts, grading), _runner(accounts, grading)
    sub = q.enqueue(uid, "graph-capture-loop", "gpu", "x = 1")
    for attempt in range(1, q.config.max_attempts + 1):
        job = q.claim(rid, ["gpu"])
        assert job.attempt == attempt
        _expire(grading, sub.id)
        q.reap()
    assert q.claim(rid, ["gpu"]) is None
    with grading.db.session() as s:
        row = s.get(Submission, sub.id)
        v = json.loads(row.verdict)
    assert (row.state, row.result) == ("done", "internal_error")
    assert "not your fault" in v["message"] and v["passed"] == 0


def test_release_when_stopping_costs_no_attempt_but_a_failure_does(grading, accounts):
    q = grading.queue
    uid, rid = _user(accounts, grading), _runner(accounts, grading)
    sub = q.enqueue(uid, "graph-capture-loop", "gpu", "x = 1")
    job = q.claim(rid, ["gpu"])
    assert q.release(job.id, job.lease_id, rid) == "queued"
    states = []
    for attempt in range(1, q.config.max_attempts + 1):
        job = q.claim(rid, ["gpu"])
        assert job.attempt == attempt
        states.append(q.release(job.id, job.lease_id, rid, failed=True))
    assert states == ["queued"] * (q.config.max_attempts - 1) + ["done"]
    with grading.db.session() as s:
        assert s.get(Submission, sub.id).result == "internal_error"


def test_cancel_and_requeue(grading, accounts):
    q = grading.queue
    uid, rid = _user(accounts, grading), _runner(accounts, grading)
    a = q.enqueue(uid, "graph-capture-loop", "gpu", "a")
    b = q.enqueue(uid, "graph-capture-loop", "gpu", "b")
    assert q.cancel(a.id) == "cancelled"
    job = q.claim(rid, ["gpu"])
    assert job.id == b.id
    assert q.cancel(b.id) == "cancelled"
    with pytest.raises(LeaseLost) as e:
        q.heartbeat(job.id, job.lease_id, rid)
    assert e.value.reason == "cancelled"
    with pytest.raises(LeaseLost):
        q.store_result(job.id, job.lease_id, rid, VERDICT)
    assert q.requeue(b.id)
    again = q.claim(rid, ["gpu"])
    assert (again.id, again.attempt) == (b.id, 1)


def test_rate_limit_queue_cap_and_paused_intake_refuse_with_retry_after(grading, accounts):
    q = grading.queue
    uid, other = _user(accounts, grading, "alice"), _user(accounts, grading, "bob")
    q.config.rate_limit, q.config.queue_cap = 3, 5
    for _ in range(3):
        q.enqueue(uid, "graph-capture-loop", "gpu", "x")
    with pytest.raises(Refused) as e:
        q.enqueue(uid, "graph-capture-loop", "gpu", "x")
    assert e.value.code == "rate_limited" and 1 <= e.value.retry_after <= q.config.rate_window_s
    q.enqueue(other, "graph-capture-loop", "gpu", "x")
    q.enqueue(other, "graph-capture-loop", "gpu", "x")
    with pytest.raises(Refused) as e:
        q.enqueue(other, "graph-capture-loop", "gpu", "x")
    assert e.value.code == "queue_full" and e.value.retry_after > 0
    q.set_intake_paused(True)
    with pytest.raises(Refused) as e:
        q.enqueue(other, "graph-capture-loop", "gpu", "x")
    assert e.value.code == "intake_paused"
    q.set_intake_paused(False)
    assert not q.intake_paused()


def test_concurrent_claims_in_threads_never_hand_out_a_job_twice(grading, accounts):
    q = grading.queue
    uid = _user(accounts, grading)
    rids = [_runner(accounts, grading, f"r{i}") for i in range(8)]
    q.config.rate_limit = q.config.queue_cap = q.config.max_queued_per_user = 1000
    ids = {q.enqueue(uid, "graph-capture-loop", "gpu", f"x = {i}").id for i in range(80)}
    got: list[int] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(rid):
        try:
            while (job := q.claim(rid, ["gpu"])) is not None:
                with lock:
                    got.append(job.id)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in rids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(got) == sorted(ids) and len(got) == len(set(got))


def test_the_watch_board_reads_state_and_position_in_one_snapshot(grading, accounts):
    """SSE streams send what the board read. A claim that commits in the middle of the board's read must not give
    'queued, no position' (under PostgreSQL's READ COMMITTED each statement has its own snapshot): the board reads
    as of one moment, here the moment before both claims."""
    from sqlalchemy import event

    q = grading.queue
    uid, rid = _user(accounts, grading), _runner(accounts, grading)
    a = q.enqueue(uid, "graph-capture-loop", "cpu", "a = 1")
    b = q.enqueue(uid, "graph-capture-loop", "cpu", "b = 1")
    grading.board.add(b.id)
    claimed = []

    def claim_both_after_the_first_read(conn, cursor, statement, *args):
        if not claimed and statement.lstrip().upper().startswith("SELECT") and "submissions" in statement:
            claimed.append(statement)
            claimed.extend(j.id for j in (q.claim(rid, ["cpu"]), q.claim(rid, ["cpu"])))  # other connections

    engine = grading.db.engine
    event.listen(engine, "after_cursor_execute", claim_both_after_the_first_read)
    try:
        seen = grading.board.get(b.id)
    finally:
        event.remove(engine, "after_cursor_execute", claim_both_after_the_first_read)
    assert claimed[1:] == [a.id, b.id], "both claims committed during the board's read"
    assert seen == ("queued", 2), seen
    assert grading.board.get(b.id, not_before=time.monotonic()) == ("running", None)

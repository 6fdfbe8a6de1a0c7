"""The runner door (issue 17): a lease is bound to the runner that claimed it, every result is checked against the
verdict schema before it is stored (a 400 naming the field, and the job kept), and one learner cannot fill the
queue. On both databases through Flask's test client; the runner's side with a real runner process."""

from __future__ import annotations

import json
import threading

import jsonschema
import pytest
from sqlalchemy import select

from web.models import Runner, Submission
from web.results import TEXT_CAP, VERDICT_SCHEMA

EX = "graph-capture-loop"
GOOD = {"status": "accepted", "mode": "gpu", "tests": [{"name": "test_a", "status": "pass", "ms": 1.5}]}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def submit(client, token, code: str = "x = 1"):
    return client.post("/api/v1/submissions", json={"exercise": EX, "code": code, "mode": "gpu"},
                       headers=bearer(token))


def strict_json(text: str):
    """Parse as JSON proper: NaN and Infinity, which Python's json reads, are an error here."""
    def refuse(literal):
        raise ValueError(f"{literal} is not JSON")
    return json.loads(text, parse_constant=refuse)


def row(grading, sid: int) -> tuple:
    with grading.db.session() as s:
        sub = s.get(Submission, sid)
        return (sub.state, sub.lease_id, sub.runner_id, sub.lease_expires_at, sub.attempts, sub.verdict, sub.result)


@pytest.fixture
def claimed(app, accounts, grading):
    """alice's submission, claimed by runner A; runner B exists too. (client, A, B, alice, job)"""
    c = app.test_client()
    alice, a, b = accounts.user("alice"), accounts.runner("a"), accounts.runner("b")
    sid = submit(c, alice).json["id"]
    job = c.post("/api/v1/runner/claim", json={"modes": ["gpu"]}, headers=bearer(a)).json["job"]
    assert job["id"] == sid
    return c, a, b, alice, job


def test_another_runner_with_the_lease_gets_403_and_changes_nothing(claimed, grading):
    c, a, b, alice, job = claimed
    sid, lease = job["id"], job["lease_id"]
    before = row(grading, sid)
    calls = [("heartbeat", {"lease_id": lease}),
             ("result", {"lease_id": lease, "verdict": {**GOOD, "status": "wrong_answer",
                                                        "tests": [{"name": "test_a", "status": "fail"}]}}),
             ("release", {"lease_id": lease, "reason": "failed"}),
             ("release", {"lease_id": lease, "reason": "stopping"})]
    for what, body in calls:
        r = c.post(f"/api/v1/runner/jobs/{sid}/{what}", json=body, headers=bearer(b))
        assert r.status_code == 403 and r.is_json, (what, r.status_code, r.get_data(as_text=True)[:300])
        assert r.json["error"]["code"] == "not_your_lease" and "another runner" in r.json["error"]["message"]
        assert row(grading, sid) == before, what
    assert c.post(f"/api/v1/runner/jobs/{sid}/heartbeat", json={"lease_id": lease}, headers=bearer(a)).status_code \
        == 200
    r = c.post(f"/api/v1/runner/jobs/{sid}/result", json={"lease_id": lease, "verdict": GOOD}, headers=bearer(a))
    assert r.json == {"stored": True}
    done = c.get(f"/api/v1/submissions/{sid}", headers=bearer(alice)).json
    assert (done["result"], done["runner"], done["judged_on"]["runner"]) == ("accepted", "a", "a")
    # the job is done: B's repeat is still refused (not answered "stored": false as if it were A's repeat)
    r = c.post(f"/api/v1/runner/jobs/{sid}/result", json={"lease_id": lease, "verdict": GOOD}, headers=bearer(b))
    assert r.status_code == 403
    with grading.db.session() as s:
        a_id = s.scalar(select(Runner.id).where(Runner.name == "a"))
    assert row(grading, sid)[2] == a_id


def _raw(verdict_json: str, lease: str) -> dict:
    return {"data": f'{{"lease_id": "{lease}", "verdict": {verdict_json}}}', "content_type": "application/json"}


def _bad_results(lease: str) -> list[tuple[dict, int, str, str]]:
    """(request kwargs, status, error code, field): each a result a broken or hostile runner could post."""
    ok = json.dumps(GOOD)[:-1]  # '{... "tests": [...]' without its closing brace
    four = [{"name": f"test_{i}", "status": "pass", "ms": 1.0} for i in range(4)]
    four_nan = json.dumps({**GOOD, "tests": four}).replace('"ms": 1.0}]', '"ms": NaN}]')
    j = lambda v: {"json": {"lease_id": lease, "verdict": v}}  # noqa: E731
    return [
        (j({**GOOD, "metrics": [1]}), 400, "bad_verdict", "verdict.metrics"),
        (j({**GOOD, "metrics": {"x": "fast"}}), 400, "bad_verdict", "verdict.metrics.x"),
        (j({**GOOD, "env": [1]}), 400, "bad_verdict", "verdict.env"),
        (j({**GOOD, "env": {"device": "tpu"}}), 400, "bad_verdict", "verdict.env.device"),
        (j({**GOOD, "trust": "x"}), 400, "bad_verdict", "verdict.trust"),
        (j({**GOOD, "trust": {"level": "total"}}), 400, "bad_verdict", "verdict.trust.level"),
        (j({**GOOD, "seed": 1.5}), 400, "bad_verdict", "verdict.seed"),
        (j({**GOOD, "seed": 2**70}), 400, "bad_verdict", "verdict.seed"),
        (j({**GOOD, "ms": -1}), 400, "bad_verdict", "verdict.ms"),
        (j({**GOOD, "ms": "fast"}), 400, "bad_verdict", "verdict.ms"),
        (j({**GOOD, "version": 1}), 400, "bad_verdict", "verdict.version"),
        (j({**GOOD, "pwned": True}), 400, "bad_verdict", "verdict.pwned"),
        (j({**GOOD, "tests": [{"name": "t", "status": "pass"}]}), 400, "bad_verdict", "verdict.tests[0].name"),
        (j({**GOOD, "tests": [{"name": "test_a"}]}), 400, "bad_verdict", "verdict.tests[0].status"),
        (j({**GOOD, "tests": [1]}), 400, "bad_verdict", "verdict.tests[0]"),
        (j({**GOOD, "tests": [{"name": "test_a", "status": "pass", "visible": "yes"}]}), 400, "bad_verdict",
         "verdict.tests[0].visible"),
        (j({**GOOD, "tests": [{"name": "test_a", "status": "pass", "output": "o" * (TEXT_CAP + 1)}]}), 400,
         "bad_verdict", "verdict.tests[0].output"),
        (j({**GOOD, "message": "m" * (TEXT_CAP + 1)}), 400, "bad_verdict", "verdict.message"),
        (j({**GOOD, "tests": [{"name": "test_a", "status": "pass"}] * 1001}), 400, "bad_verdict", "verdict.tests"),
        (_raw(ok + ', "seed": 1e999}', lease), 400, "bad_number", "verdict.seed"),
        (_raw(ok + ', "ms": NaN}', lease), 400, "bad_number", "verdict.ms"),
        (_raw(ok + ', "ms": Infinity}', lease), 400, "bad_number", "verdict.ms"),
        (_raw(ok + ', "metrics": {"decode_ms": -Infinity}}', lease), 400, "bad_number", "verdict.metrics.decode_ms"),
        (_raw(four_nan, lease), 400, "bad_number", "verdict.tests[3].ms"),
        (j({**GOOD, "tests": [{"name": "test_a", "status": "pass", "output": "o" * 3_000_000}]}), 413,
         "request_entity_too_large", ""),
    ]


def test_a_result_outside_the_verdict_schema_is_refused_naming_the_field_and_the_job_is_kept(claimed, grading):
    c, a, _b, alice, job = claimed
    sid, lease = job["id"], job["lease_id"]
    before = row(grading, sid)
    wrong = []
    for kw, status, code, field in _bad_results(lease):
        r = c.post(f"/api/v1/runner/jobs/{sid}/result", headers=bearer(a), **kw)
        err = r.get_json(silent=True)
        err = err.get("error", {}) if isinstance(err, dict) else {}
        if (r.status_code, err.get("code"), err.get("field", "")) != (status, code, field) or \
                not err.get("message") or (field and field not in err["message"]):
            wrong.append((field, status, r.status_code, r.get_data(as_text=True)[:300]))
        assert row(grading, sid) == before, field  # nothing stored, the lease untouched
    assert not wrong, wrong
    # the lease still holds: the runner renews it and posts a result that is right
    assert c.post(f"/api/v1/runner/jobs/{sid}/heartbeat", json={"lease_id": lease}, headers=bearer(a)).status_code \
        == 200
    full = {**GOOD, "seed": 7, "metrics": {"decode_ms": 2.5}, "env": {"device": "cuda", "gpu": "H100"},
            "trust": {"level": "trusted", "measures": ["docker"]}}
    r = c.post(f"/api/v1/runner/jobs/{sid}/result", json={"lease_id": lease, "verdict": full}, headers=bearer(a))
    assert r.json == {"stored": True}
    served = strict_json(c.get(f"/api/v1/submissions/{sid}", headers=bearer(alice)).get_data(as_text=True))
    jsonschema.validate(served["verdict"], VERDICT_SCHEMA)  # what is stored is a whole verdict of the schema
    assert (served["verdict"]["seed"], served["verdict"]["passed"], served["verdict"]["env"]["python"]) == (7, 1, "")


def test_a_refused_result_can_be_released_and_the_job_is_judged_again(claimed, grading):
    c, a, _b, _alice, job = claimed
    sid, lease = job["id"], job["lease_id"]
    r = c.post(f"/api/v1/runner/jobs/{sid}/result", headers=bearer(a), **_raw(json.dumps(GOOD)[:-1] + ', "ms": NaN}',
                                                                               lease))
    assert (r.status_code, r.json["error"]["field"]) == (400, "verdict.ms")
    r = c.post(f"/api/v1/runner/jobs/{sid}/release", json={"lease_id": lease, "reason": "failed",
                                                          "message": "verdict refused"}, headers=bearer(a))
    assert r.json == {"released": True, "status": "queued"}
    again = c.post("/api/v1/runner/claim", json={"modes": ["gpu"]}, headers=bearer(a)).json["job"]
    assert (again["id"], again["attempt"]) == (sid, 2) and again["lease_id"] != lease


def test_nan_anywhere_in_a_learner_request_is_a_400_naming_the_field(app, accounts):
    c = app.test_client()
    alice = accounts.user("alice")
    body = '{"exercise": "graph-capture-loop", "code": "x = 1", "mode": "gpu", "run": NaN}'
    r = c.post("/api/v1/submissions", data=body, content_type="application/json", headers=bearer(alice))
    assert (r.status_code, r.json["error"]["code"], r.json["error"]["field"]) == (400, "bad_number", "run")


def test_a_learner_over_the_queued_cap_gets_429_and_others_still_submit(app, accounts, grading):
    c = app.test_client()
    alice, bob, runner = accounts.user("alice"), accounts.user("bob"), accounts.runner("r1")
    cap = app.config["MAX_QUEUED_PER_USER"]
    assert cap == 3 and grading.queue.config.max_queued_per_user == 3
    first = [submit(c, alice, f"x = {i}") for i in range(cap)]
    assert [r.status_code for r in first] == [201] * cap
    r = submit(c, alice, "one too many")
    assert r.status_code == 429 and r.json["error"]["code"] == "too_many_queued"
    assert "3 submissions waiting" in r.json["error"]["message"] and int(r.headers["Retry-After"]) >= 1
    assert submit(c, bob).status_code == 201  # others are not held up by alice
    # a job that leaves the queue (claimed, or cancelled) makes room for one more
    c.post("/api/v1/runner/claim", json={"modes": ["gpu"]}, headers=bearer(runner))
    assert submit(c, alice, "after a claim").status_code == 201
    assert submit(c, alice, "over again").status_code == 429
    c.post(f"/api/v1/submissions/{first[1].json['id']}/cancel", headers=bearer(alice))
    assert submit(c, alice, "after a cancel").status_code == 201
    # the site-wide cap still holds, for everyone
    grading.queue.config.queue_cap = 4  # alice's 3 queued and bob's 1
    r = submit(c, bob, "site full")
    assert (r.status_code, r.json["error"]["code"]) == (429, "queue_full")


def test_the_queued_cap_holds_for_submissions_at_the_same_moment(app, accounts, grading):
    alice = accounts.user("alice")
    grading.queue.config.rate_limit = 1000
    barrier = threading.Barrier(8)
    codes: list[int] = []

    def one(i: int) -> None:
        c = app.test_client()
        barrier.wait()
        codes.append(submit(c, alice, f"x = {i}").status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(codes) == [201] * 3 + [429] * 5
    with grading.db.session() as s:
        assert len(s.scalars(select(Submission.id).where(Submission.state == "queued")).all()) == 3


def test_a_runner_whose_verdict_is_refused_hands_the_job_back_and_keeps_judging(site_factory, tmp_path):
    """The runner process is the subject (SQLite only); the database's side is tested above on both."""
    from tests.server.pieces import World, fresh_database, wait_for

    w = World(fresh_database("sqlite", None, tmp_path), site_factory, runners=1,
              env={"MINISGL_PRACTICE_MAX_ATTEMPTS": "2"})
    try:
        bad, nan, good = w.submit("bad-verdict"), w.submit("nan-verdict"), w.submit("fine = 1")
        r = w.runner(0, tmp_path)
        rows = wait_for(lambda: (rs := w.rows()) and all(rs[i].state == "done" for i in (bad, nan, good)) and rs,
                        90, "the three jobs to end")
        assert (rows[good].result, rows[good].attempts) == ("accepted", 1)
        for sid in (bad, nan):  # tried twice, each time refused and handed back; then ended, not your fault
            assert (rows[sid].result, rows[sid].attempts) == ("internal_error", 2), rows[sid].verdict
            assert "not your fault" in rows[sid].verdict_dict()["message"]
        log = r.log_text()
        assert log.count("but the site refused the verdict") == 4, log[-3000:]
        assert "verdict.metrics must be object" in log and "not JSON" in log
        r.signal(15)
        assert r.wait(30) == 0
    finally:
        w.db.dispose()

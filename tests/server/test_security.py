"""Security of the learner and runner endpoints: tokens required (401), others' submissions hidden (404),
and a table of malformed or oversized requests, each answered with a 4xx JSON error, never a 500."""

from __future__ import annotations

import pytest

LEARNER_ENDPOINTS = [
    ("POST", "/api/v1/submissions"),
    ("GET", "/api/v1/submissions"),
    ("GET", "/api/v1/submissions/{sid}"),
    ("GET", "/api/v1/submissions/{sid}/events"),
    ("POST", "/api/v1/submissions/{sid}/cancel"),
    ("GET", "/api/v1/me"),
]
RUNNER_ENDPOINTS = [
    ("POST", "/api/v1/runner/claim"),
    ("POST", "/api/v1/runner/jobs/{sid}/heartbeat"),
    ("POST", "/api/v1/runner/jobs/{sid}/result"),
    ("POST", "/api/v1/runner/jobs/{sid}/release"),
]


@pytest.fixture
def world(app, accounts):
    c = app.test_client()
    alice, bob, runner = accounts.user("alice"), accounts.user("bob"), accounts.runner("r1")
    sid = c.post("/api/v1/submissions", json={"exercise": "graph-capture-loop", "code": "x = 1", "mode": "gpu"},
                 headers={"Authorization": f"Bearer {alice}"}).json["id"]
    return c, alice, bob, runner, sid


def test_every_endpoint_refuses_a_missing_or_wrong_token(world):
    c, alice, _bob, runner, sid = world
    bad = [None, "Bearer", "Bearer ", "Bearer msu_nottherealtoken", "Bearer msr_nottherealtoken", "Basic YWxpY2U6eA==",
           "Bearer " + "x" * 5000]
    for method, path in LEARNER_ENDPOINTS + RUNNER_ENDPOINTS:
        for header in bad:
            r = c.open(path.format(sid=sid), method=method, json={},
                       headers={"Authorization": header} if header else {})
            assert r.status_code == 401, (method, path, header, r.status_code)
            assert r.is_json and r.json["error"]["code"] == "unauthorized"
    for method, path in RUNNER_ENDPOINTS:  # a learner's token is not a runner's
        r = c.open(path.format(sid=sid), method=method, json={}, headers={"Authorization": f"Bearer {alice}"})
        assert r.status_code == 401
    for method, path in LEARNER_ENDPOINTS:  # nor the other way round
        r = c.open(path.format(sid=sid), method=method, json={}, headers={"Authorization": f"Bearer {runner}"})
        assert r.status_code == 401


def test_another_learners_submission_is_not_found(world):
    c, _alice, bob, _runner, sid = world
    for method, path in LEARNER_ENDPOINTS[2:5]:
        r = c.open(path.format(sid=sid), method=method, headers={"Authorization": f"Bearer {bob}"})
        assert (r.status_code, r.json["error"]["code"]) == (404, "not_found")


def _cases(sid: int, lease: str = "abc") -> list[tuple]:
    """(who, method, path, kwargs, expected status); ``lease`` is runner r1's lease on job ``sid``."""
    sub = "/api/v1/submissions"
    claim = "/api/v1/runner/claim"
    job = f"/api/v1/runner/jobs/{sid}"
    big = "x" * (65536 + 1)
    ok = {"exercise": "graph-capture-loop", "code": "x = 1", "mode": "gpu"}
    good = {"status": "accepted", "tests": [{"name": "test_a", "status": "pass"}]}

    def raw(text: str) -> dict:
        return {"data": text, "content_type": "application/json"}

    def verdict(**fields) -> dict:
        return {"json": {"lease_id": lease, "verdict": {**good, **fields}}}

    return [
        ("learner", "POST", sub, {"data": "not json", "content_type": "application/json"}, 400),
        ("learner", "POST", sub, {"data": "{\"exercise\": ", "content_type": "application/json"}, 400),
        ("learner", "POST", sub, {"data": "exercise=x", "content_type": "application/x-www-form-urlencoded"}, 415),
        ("learner", "POST", sub, {"data": "", "content_type": "text/plain"}, 415),
        ("learner", "POST", sub, {"json": []}, 400),
        ("learner", "POST", sub, {"json": "a string"}, 400),
        ("learner", "POST", sub, {}, 415),
        ("learner", "POST", sub, {"json": {}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "exercise": 7}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "exercise": ""}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "exercise": "no-such-exercise"}}, 404),
        ("learner", "POST", sub, {"json": {**ok, "exercise": "../../etc/passwd"}}, 404),
        ("learner", "POST", sub, {"json": {**ok, "exercise": "e" * 10000}}, 404),
        ("learner", "POST", sub, {"json": {**ok, "mode": "tpu"}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "mode": ["gpu"]}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "mode": "browser"}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "code": None}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "code": 12}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "code": {"a": 1}}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "code": "a\x00b"}}, 400),
        ("learner", "POST", sub, {"data": '{"exercise": "graph-capture-loop", "mode": "gpu", "code": "\\ud800"}',
                                  "content_type": "application/json"}, 400),
        ("learner", "POST", sub, {"json": {**ok, "code": big}}, 413),
        ("learner", "POST", sub, {"data": "[" + "1," * 200000 + "1]", "content_type": "application/json"}, 413),
        ("learner", "POST", sub, {"json": {**ok, "run": "yes"}}, 400),
        ("learner", "POST", sub, {"json": {**ok, "admin": True}}, 400),
        ("learner", "POST", sub, {"data": '{"a":' * 5000 + "1" + "}" * 5000, "content_type": "application/json"}, 400),
        ("learner", "GET", f"{sub}?limit=abc", {}, 400),
        ("learner", "GET", f"{sub}?limit=" + "9" * 5000, {}, 414),
        ("learner", "GET", f"{sub}?limit=1e5", {}, 400),
        ("learner", "GET", f"{sub}/abc", {}, 404),
        ("learner", "GET", f"{sub}/-1", {}, 404),
        ("learner", "GET", f"{sub}/99999999999999999999999", {}, 404),
        ("learner", "GET", f"{sub}/{sid}%00", {}, 404),
        ("learner", "GET", f"{sub}/999999", {}, 404),
        ("learner", "DELETE", f"{sub}/{sid}", {}, 405),
        ("learner", "PUT", sub, {"json": ok}, 405),
        ("learner", "GET", f"{sub}/{sid}/cancel", {}, 405),
        ("learner", "POST", f"{sub}/999999/cancel", {}, 404),
        ("learner", "GET", "/api/v1/" + "a" * 3000, {}, 404),
        ("runner", "POST", claim, {"json": {"modes": "gpu"}}, 400),
        ("runner", "POST", claim, {"json": {"modes": []}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["quantum"]}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "wait": -1}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "wait": "10"}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "wait": True}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "gpu": 5}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "gpu": "G" * 500}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "version": ["x"]}}, 400),
        ("runner", "POST", claim, {"data": "[]", "content_type": "application/json"}, 400),
        ("runner", "GET", claim, {}, 405),
        ("runner", "POST", f"{job}/heartbeat", {"json": {}}, 400),
        ("runner", "POST", f"{job}/heartbeat", {"json": {"lease_id": 12}}, 400),
        ("runner", "POST", f"{job}/heartbeat", {"json": {"lease_id": "x" * 100}}, 400),
        ("runner", "POST", f"{job}/heartbeat", {"json": {"lease_id": "not-the-lease"}}, 409),
        ("runner", "POST", "/api/v1/runner/jobs/999999/heartbeat", {"json": {"lease_id": "abc"}}, 409),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc"}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": "accepted"}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": {}}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": {"status": "pwned"}}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": {
            "status": "accepted", "tests": [{"name": "t", "status": "weird"}]}}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": {
            "status": "accepted", "tests": "many"}}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": {
            "status": "accepted", "passed": "lots"}}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": {"status": "accepted"},
                                                      "judged_on": "gpu"}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "abc", "verdict": {"status": "accepted"}}}, 409),
        ("runner", "POST", f"{job}/result", {"data": "x" * (5 * 2**20), "content_type": "application/json"}, 413),
        ("runner", "POST", f"{job}/release", {"json": {"lease_id": "abc", "reason": "bored"}}, 400),
        ("runner", "POST", f"{job}/release", {"json": {"lease_id": "abc"}}, 409),
        ("runner", "POST", "/api/v1/runner/jobs/abc/result", {"json": {}}, 404),
        ("anyone", "GET", "/api/v1/runner/nothing", {}, 404),
        ("anyone", "POST", "/api/v1/grading", {}, 405),
        # issue 17: numbers that are not JSON, a learner over the queued cap, another runner's lease, results outside
        # the verdict schema (each named by its field), an oversized result
        ("learner", "POST", sub, raw('{"exercise": "graph-capture-loop", "code": "x", "mode": "gpu", "run": NaN}'),
         400),
        ("learner", "POST", sub, raw('{"exercise": "graph-capture-loop", "code": "x", "mode": "gpu", "run": 1e999}'),
         400),
        ("learner", "POST", sub, raw('{"exercise": Infinity}'), 400),
        ("carol", "POST", sub, {"json": ok}, 429),
        ("runner2", "POST", f"{job}/heartbeat", {"json": {"lease_id": lease}}, 403),
        ("runner2", "POST", f"{job}/result", {"json": {"lease_id": lease, "verdict": good}}, 403),
        ("runner2", "POST", f"{job}/release", {"json": {"lease_id": lease, "reason": "failed"}}, 403),
        ("runner", "POST", f"{job}/heartbeat", raw(f'{{"lease_id": "{lease}", "pad": NaN}}'), 400),
        ("runner", "POST", f"{job}/release", raw(f'{{"lease_id": "{lease}", "reason": "failed", "x": -Infinity}}'),
         400),
        ("runner", "POST", claim, raw('{"modes": ["gpu"], "wait": NaN}'), 400),
        ("runner", "POST", f"{job}/result", verdict(metrics=[1]), 400),
        ("runner", "POST", f"{job}/result", verdict(metrics={"m": "x"}), 400),
        ("runner", "POST", f"{job}/result", verdict(env=[1]), 400),
        ("runner", "POST", f"{job}/result", verdict(env={"device": "tpu"}), 400),
        ("runner", "POST", f"{job}/result", verdict(trust="x"), 400),
        ("runner", "POST", f"{job}/result", verdict(trust={"level": "x", "measures": "all"}), 400),
        ("runner", "POST", f"{job}/result", verdict(seed="7"), 400),
        ("runner", "POST", f"{job}/result", verdict(seed=2**64), 400),
        ("runner", "POST", f"{job}/result", verdict(ms=-5), 400),
        ("runner", "POST", f"{job}/result", verdict(version=99), 400),
        ("runner", "POST", f"{job}/result", verdict(extra=1), 400),
        ("runner", "POST", f"{job}/result", verdict(tests=[{"name": "t", "status": "pass"}]), 400),
        ("runner", "POST", f"{job}/result", verdict(tests=[{"name": "test_a", "status": "pass", "ms": "slow"}]), 400),
        ("runner", "POST", f"{job}/result", verdict(tests=[None]), 400),
        ("runner", "POST", f"{job}/result", verdict(output="o" * 70000), 400),
        ("runner", "POST", f"{job}/result", raw(f'{{"lease_id": "{lease}", "verdict": {{"status": "accepted", '
                                                '"seed": 1e999}}'), 400),
        ("runner", "POST", f"{job}/result", raw(f'{{"lease_id": "{lease}", "verdict": {{"status": "accepted", '
                                                '"tests": [{"name": "test_a", "status": "pass", "ms": NaN}]}}}}'), 400),
        ("runner", "POST", f"{job}/result", verdict(tests=[{"name": "test_a", "status": "pass",
                                                            "output": "o" * 3_000_000}]), 413),
        # issue 17's attack review: a verdict that passes the schema but is not this job's; bytes that are not UTF-8
        ("runner", "POST", f"{job}/result", verdict(exercise="graph-capture-buffer"), 400),
        ("runner", "POST", f"{job}/result", verdict(run=True), 400),
        ("runner", "POST", f"{job}/result", verdict(mode="browser"), 400),
        ("runner", "POST", f"{job}/result", {"data": b'{"lease_id": "' + lease.encode() + b'", "verdict": '
                                             b'{"status": "accepted", "message": "\xff\xfe"}}',
                                             "content_type": "application/json"}, 400),
        # ... text PostgreSQL cannot store or compare (a NUL byte) or no database can encode (a lone surrogate)
        ("learner", "GET", f"{sub}?exercise=a%00b", {}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "version": "1.0\x00"}}, 400),
        ("runner", "POST", claim, {"json": {"modes": ["gpu"], "gpu": "H100\x00"}}, 400),
        ("runner", "POST", claim, raw('{"modes": ["gpu"], "version": "\\ud800"}'), 400),
        ("runner", "POST", f"{job}/heartbeat", {"json": {"lease_id": "a\x00"}}, 400),
        ("runner", "POST", f"{job}/result", {"json": {"lease_id": "a\x00", "verdict": good}}, 400),
        ("runner", "POST", f"{job}/release", {"json": {"lease_id": "a\x00"}}, 400),
        ("runner", "POST", f"{job}/heartbeat", raw('{"lease_id": "\\udc80"}'), 400),
    ]


def test_malformed_and_oversized_requests_get_a_4xx_json_error(world, accounts, grading):
    c, alice, _bob, runner, sid = world
    lease = c.post("/api/v1/runner/claim", json={"modes": ["gpu"]},
                   headers={"Authorization": f"Bearer {runner}"}).json["job"]["lease_id"]
    carol = accounts.user("carol")  # her queue is full: MAX_QUEUED_PER_USER (3) submissions waiting
    for i in range(grading.queue.config.max_queued_per_user):
        assert c.post("/api/v1/submissions", json={"exercise": "graph-capture-loop", "code": f"x = {i}", "mode": "gpu"},
                      headers={"Authorization": f"Bearer {carol}"}).status_code == 201
    tokens = {"learner": alice, "runner": runner, "anyone": None, "carol": carol, "runner2": accounts.runner("r2")}
    cases = _cases(sid, lease)
    assert len(cases) >= 40
    failures = []
    for who, method, path, kw, want in cases:
        headers = {"Authorization": f"Bearer {tokens[who]}"} if tokens[who] else {}
        r = c.open(path, method=method, headers=headers, **kw)
        body = r.get_json(silent=True)
        err = body.get("error") if isinstance(body, dict) else None
        if r.status_code != want or not isinstance(err, dict) or err.get("status") != want or not err.get("code") \
                or not err.get("message"):
            failures.append((method, path[:80], want, r.status_code, r.get_data(as_text=True)[:200]))
    assert not failures, failures

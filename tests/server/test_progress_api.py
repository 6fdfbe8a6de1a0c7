"""A learner's progress and saved code on the server (``web/progress.py``) through Flask's test client, on both
databases: the best result, attempts, run-only and unfinished submissions left out, other learners' never shown;
workspaces saved, listed, read and deleted; 401, 404, 413 and CSRF for session-cookie writes."""

from __future__ import annotations

import datetime as dt
import json
import re

from web.models import CANCELLED, DONE, QUEUED, Submission, User

EX, OTHER = "graph-capture-loop", "graph-capture-buffer"
T0 = dt.datetime(2026, 12, 1, 9, 0, 0)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _judged(db, username, exercise, result, passed, minutes, *, run=False, state=DONE) -> int:
    """A submission as a runner leaves it, written with the ORM."""
    with db.session() as s:
        uid = s.query(User.id).filter(User.username == username).scalar()
        at = T0 + dt.timedelta(minutes=minutes)
        verdict = {"status": result, "passed": passed, "total": 9, "tests": []} if state == DONE else None
        sub = Submission(user_id=uid, exercise=exercise, mode="gpu", run_only=run, code="x = 1", state=state,
                         result=result if state == DONE else None, verdict=json.dumps(verdict) if verdict else None,
                         created_at=at, finished_at=at if state in (DONE, CANCELLED) else None, updated_at=at)
        s.add(sub)
        s.flush()
        return sub.id


def test_progress_is_the_best_graded_verdict_per_exercise(app, grading, accounts):
    c = app.test_client()
    ada, bob = accounts.user("ada"), accounts.user("bob")
    db = grading.db
    assert c.get("/api/v1/progress", headers=bearer(ada)).json == {"exercises": {}}
    _judged(db, "ada", EX, "wrong_answer", 5, 1)
    best_wrong = _judged(db, "ada", EX, "runtime_error", 7, 2)
    _judged(db, "ada", EX, "wrong_answer", 3, 3)
    _judged(db, "ada", EX, "accepted", 9, 4, run=True)  # a Run: never solves, never counts
    _judged(db, "ada", EX, "accepted", 9, 5, state=QUEUED)  # not judged yet
    _judged(db, "ada", EX, "accepted", 9, 6, state=CANCELLED)
    _judged(db, "bob", EX, "accepted", 9, 0)  # another learner's
    _judged(db, "bob", OTHER, "accepted", 9, 0)
    mine = c.get("/api/v1/progress", headers=bearer(ada)).json["exercises"]
    assert list(mine) == [EX]
    assert mine[EX] == {"status": "tried", "attempts": 3, "first_accepted_at": None, "last_at": "2026-12-01T09:03:00Z",
                        "best": {"submission": best_wrong, "result": "runtime_error", "passed": 7,
                                 "finished_at": "2026-12-01T09:02:00Z"}}
    first = _judged(db, "ada", EX, "accepted", 9, 10)
    _judged(db, "ada", EX, "wrong_answer", 8, 11)  # worse after the accepted one: still solved
    latest = _judged(db, "ada", EX, "accepted", 9, 12)
    e = c.get("/api/v1/progress", headers=bearer(ada)).json["exercises"][EX]
    assert (e["status"], e["attempts"], e["first_accepted_at"]) == ("solved", 6, "2026-12-01T09:10:00Z")
    assert e["best"] == {"submission": latest, "result": "accepted", "passed": 9,  # the latest accepted one
                         "finished_at": "2026-12-01T09:12:00Z"} and latest > first
    theirs = c.get("/api/v1/progress", headers=bearer(bob)).json["exercises"]
    assert {k: v["attempts"] for k, v in theirs.items()} == {EX: 1, OTHER: 1}


def test_workspaces_save_list_read_delete(app, accounts):
    c = app.test_client()
    ada, bob = bearer(accounts.user("ada")), bearer(accounts.user("bob"))
    assert c.get("/api/v1/workspaces", headers=ada).json == {"workspaces": []}
    none = c.get(f"/api/v1/workspaces/{EX}", headers=ada)
    assert (none.status_code, none.json["error"]["code"]) == (404, "no_workspace")
    code = "def f():\n    return 'é'\n"
    r = c.put(f"/api/v1/workspaces/{EX}", json={"code": code}, headers=ada)
    assert r.status_code == 200 and r.json["size"] == len(code.encode()) and r.json["exercise"] == EX
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", r.json["saved_at"])
    got = c.get(f"/api/v1/workspaces/{EX}", headers=ada).json
    assert got == {**r.json, "code": code}
    again = c.put(f"/api/v1/workspaces/{EX}", json={"code": "y = 2"}, headers=ada).json  # replaces it
    assert c.get(f"/api/v1/workspaces/{EX}", headers=ada).json["code"] == "y = 2"
    c.put(f"/api/v1/workspaces/{OTHER}", json={"code": ""}, headers=ada)
    listing = c.get("/api/v1/workspaces", headers=ada).json["workspaces"]
    assert [(w["exercise"], w["size"]) for w in listing] == [(OTHER, 0), (EX, 5)] and "code" not in listing[0]
    assert listing[1]["saved_at"] == again["saved_at"]
    assert c.get("/api/v1/workspaces", headers=bob).json == {"workspaces": []}  # only ever your own
    assert c.get(f"/api/v1/workspaces/{EX}", headers=bob).status_code == 404
    assert c.delete(f"/api/v1/workspaces/{EX}", headers=bob).status_code == 204  # bob's nothing: ada's is kept
    assert c.get(f"/api/v1/workspaces/{EX}", headers=ada).status_code == 200
    assert c.delete(f"/api/v1/workspaces/{EX}", headers=ada).status_code == 204
    assert c.get(f"/api/v1/workspaces/{EX}", headers=ada).status_code == 404
    assert [w["exercise"] for w in c.get("/api/v1/workspaces", headers=ada).json["workspaces"]] == [OTHER]


def test_bad_requests(app, accounts):
    c = app.test_client()
    ada = bearer(accounts.user("ada"))
    for method, url in [("get", "/api/v1/progress"), ("get", "/api/v1/workspaces"),
                        ("get", f"/api/v1/workspaces/{EX}"), ("put", f"/api/v1/workspaces/{EX}"),
                        ("delete", f"/api/v1/workspaces/{EX}")]:
        r = getattr(c, method)(url, json={"code": "x"})
        assert (r.status_code, r.json["error"]["code"]) == (401, "unauthorized"), (method, url)
    unknown = c.put("/api/v1/workspaces/no-such-exercise", json={"code": "x"}, headers=ada)
    assert (unknown.status_code, unknown.json["error"]["code"]) == (404, "not_found")
    assert c.get("/api/v1/workspaces/no-such-exercise", headers=ada).status_code == 404
    assert c.get("/api/v1/workspaces/Not_A_Slug", headers=ada).status_code == 400
    limit = app.config["MAX_CODE_BYTES"]
    for code in ("a" * (limit + 1), "é" * (limit // 2 + 1)):  # UTF-8 bytes are counted, not characters
        big = c.put(f"/api/v1/workspaces/{EX}", data=json.dumps({"code": code}, ensure_ascii=False).encode(),
                    content_type="application/json", headers=ada)
        assert (big.status_code, big.json["error"]["code"]) == (413, "code_too_large")
    huge = c.put(f"/api/v1/workspaces/{EX}", data="x" * (3 * limit + 8192), content_type="application/json",
                 headers=ada)  # refused before it is read
    assert huge.status_code == 413
    for body, code in [({"code": 1}, "bad_code"), ({"code": "a\x00b"}, "bad_code"),
                       ({"code": "x", "extra": 1}, "unknown_field"), ({}, "bad_code")]:
        r = c.put(f"/api/v1/workspaces/{EX}", json=body, headers=ada)
        assert (r.status_code, r.json["error"]["code"]) == (400, code), body
    assert c.put(f"/api/v1/workspaces/{EX}", data="code=x", headers=ada).status_code == 415
    assert c.get(f"/api/v1/workspaces/{EX}", headers=ada).status_code == 404  # nothing refused was saved
    exactly = c.put(f"/api/v1/workspaces/{EX}", json={"code": "a" * limit}, headers=ada)
    assert (exactly.status_code, exactly.json["size"]) == (200, limit)


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def test_session_cookie_writes_need_the_csrf_token(app, accounts):
    c = app.test_client()
    accounts.user("ada", password="ada-password-1")
    page = c.get("/login")
    c.post("/login", data={"username": "ada", "password": "ada-password-1", "csrf_token": _csrf(page.text)})
    me = c.get("/api/v1/me").json
    assert me["user"]["username"] == "ada"
    assert c.get("/api/v1/progress").status_code == 200  # reading needs no token
    for r in (c.put(f"/api/v1/workspaces/{EX}", json={"code": "x = 1"}),
              c.put(f"/api/v1/workspaces/{EX}", json={"code": "x = 1"}, headers={"X-CSRF-Token": "wrong"}),
              c.delete(f"/api/v1/workspaces/{EX}")):
        assert (r.status_code, r.json["error"]["code"]) == (403, "csrf_failed")
    assert c.get(f"/api/v1/workspaces/{EX}").status_code == 404
    ok = c.put(f"/api/v1/workspaces/{EX}", json={"code": "x = 1"}, headers={"X-CSRF-Token": me["csrf_token"]})
    assert ok.status_code == 200 and c.get(f"/api/v1/workspaces/{EX}").json["code"] == "x = 1"
    assert c.delete(f"/api/v1/workspaces/{EX}", headers={"X-CSRF-Token": me["csrf_token"]}).status_code == 204

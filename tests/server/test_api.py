"""The learner API and the account pages through Flask's test client, on both databases."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from web.models import ApiToken, Invite, Runner, User

EX = "graph-capture-loop"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def submit(client, token, **body):
    return client.post("/api/v1/submissions", json={"exercise": EX, "code": "x = 1", "mode": "gpu", **body},
                       headers=bearer(token))


def test_submit_poll_and_see_the_verdict(app, accounts):
    c = app.test_client()
    tok, rtok = accounts.user("alice"), accounts.runner("r1")
    r = submit(c, tok)
    assert r.status_code == 201 and r.headers["Location"] == f"/api/v1/submissions/{r.json['id']}"
    assert (r.json["status"], r.json["position"], r.json["verdict"]) == ("queued", 1, None)
    second = submit(c, tok, mode="cpu", run=True).json
    assert (second["position"], second["mode"], second["run"]) == (2, "cpu", True)
    job = c.post("/api/v1/runner/claim", json={"modes": ["gpu"], "gpu": "NVIDIA H100"}, headers=bearer(rtok)).json
    assert job["job"]["id"] == r.json["id"] and job["job"]["code"] == "x = 1"
    mine = c.get(f"/api/v1/submissions/{r.json['id']}", headers=bearer(tok)).json
    assert (mine["status"], mine["runner"], mine["position"]) == ("running", "r1", None)
    assert c.get(f"/api/v1/submissions/{second['id']}", headers=bearer(tok)).json["position"] == 1
    verdict = {"status": "accepted", "mode": "gpu", "tests": [{"name": "test_a", "status": "pass"}],
               "metrics": {"eager_decode_ms": 2.5, "graph_decode_ms": 0.8}}
    r2 = c.post(f"/api/v1/runner/jobs/{job['job']['id']}/result",
                json={"lease_id": job["job"]["lease_id"], "verdict": verdict, "judged_on": {"gpu": "NVIDIA H100"}},
                headers=bearer(rtok))
    assert r2.json == {"stored": True}
    done = c.get(f"/api/v1/submissions/{r.json['id']}", headers=bearer(tok)).json
    assert (done["status"], done["result"], done["verdict"]["passed"]) == ("done", "accepted", 1)
    assert done["verdict"]["metrics"] == {"eager_decode_ms": 2.5, "graph_decode_ms": 0.8}
    assert done["judged_on"] == {"gpu": "NVIDIA H100", "runner": "r1"} and done["runner_label"] == "runner r1"
    listing = c.get("/api/v1/submissions", headers=bearer(tok)).json["submissions"]
    assert [s["id"] for s in listing] == [second["id"], r.json["id"]] and "verdict" not in listing[0]


def test_events_stream_queued_running_done_and_heartbeats(app, accounts):
    c = app.test_client()
    tok, rtok = accounts.user("alice"), accounts.runner("r1")
    sid = submit(c, tok).json["id"]
    job = c.post("/api/v1/runner/claim", json={"modes": ["gpu"]}, headers=bearer(rtok)).json["job"]
    c.post(f"/api/v1/runner/jobs/{sid}/result", headers=bearer(rtok),
           json={"lease_id": job["lease_id"], "verdict": {"status": "wrong_answer", "tests": [
               {"name": "test_t", "status": "fail", "message": "tokens differ"}]}})
    r = c.get(f"/api/v1/submissions/{sid}/events", headers=bearer(tok))
    assert r.mimetype == "text/event-stream" and r.headers["Cache-Control"] == "no-cache"
    events = [b for b in r.get_data(as_text=True).split("\n\n") if b.startswith("id:")]
    assert len(events) == 1  # done already: one event, then the stream ends
    name = re.search(r"^event: (\w+)$", events[0], re.M).group(1)
    data = json.loads(re.search(r"^data: (.*)$", events[0], re.M).group(1))
    assert name == "done" and data["verdict"]["tests"][0]["message"] == "tokens differ"


def test_cancel(app, accounts):
    c = app.test_client()
    tok = accounts.user("alice")
    sid = submit(c, tok).json["id"]
    r = c.post(f"/api/v1/submissions/{sid}/cancel", headers=bearer(tok))
    assert (r.status_code, r.json["status"]) == (200, "cancelled")
    again = c.post(f"/api/v1/submissions/{sid}/cancel", headers=bearer(tok))
    assert (again.status_code, again.json["error"]["code"]) == (409, "already_finished")


def test_another_learners_submission_is_404_but_staff_see_it(app, accounts):
    c = app.test_client()
    alice, bob, staff = accounts.user("alice"), accounts.user("bob"), accounts.user("teacher", staff=True)
    sid = submit(c, alice).json["id"]
    for path, method in ((f"/api/v1/submissions/{sid}", "get"), (f"/api/v1/submissions/{sid}/events", "get"),
                         (f"/api/v1/submissions/{sid}/cancel", "post")):
        r = getattr(c, method)(path, headers=bearer(bob))
        assert (r.status_code, r.json["error"]["code"]) == (404, "not_found"), path
    assert c.get("/api/v1/submissions", headers=bearer(bob)).json["submissions"] == []
    assert c.get(f"/api/v1/submissions/{sid}", headers=bearer(staff)).json["user"] == "alice"
    assert len(c.get("/api/v1/submissions?all=1", headers=bearer(staff)).json["submissions"]) == 1
    assert c.get("/api/v1/submissions?all=1", headers=bearer(bob)).json["submissions"] == []


def test_the_latest_submission_of_an_exercise_is_only_ever_the_callers_own(app, accounts):
    """What the exercise page asks after a reload (``?exercise=ID&limit=1``): the caller's newest submission of
    that exercise; another learner's newer one, or one of another exercise, is never it."""
    c = app.test_client()
    alice, bob, carol = accounts.user("alice"), accounts.user("bob"), accounts.user("carol")
    mine = submit(c, alice).json["id"]
    submit(c, alice, exercise="graph-capture-buffer", mode="cpu")
    bobs = submit(c, bob).json["id"]
    latest = f"/api/v1/submissions?exercise={EX}&limit=1"
    got = c.get(latest, headers=bearer(alice)).json["submissions"]
    assert [(s["id"], s["user"], s["exercise"]) for s in got] == [(mine, "alice", EX)]
    assert [s["id"] for s in c.get(latest, headers=bearer(bob)).json["submissions"]] == [bobs]
    assert c.get(latest, headers=bearer(carol)).json["submissions"] == []
    everyone = c.get(f"/api/v1/submissions?exercise={EX}&all=1", headers=bearer(carol)).json["submissions"]
    assert everyone == []  # all=1 is for staff only


def test_429_with_retry_after_and_503_when_paused(app, accounts, grading):
    c = app.test_client()
    tok = accounts.user("alice")
    grading.queue.config.rate_limit = 2
    assert submit(c, tok).status_code == 201 and submit(c, tok).status_code == 201
    r = submit(c, tok)
    assert (r.status_code, r.json["error"]["code"]) == (429, "rate_limited") and int(r.headers["Retry-After"]) >= 1
    grading.queue.config.rate_limit, grading.queue.config.queue_cap = 100, 2
    r = submit(c, accounts.user("bob"))
    assert (r.status_code, r.json["error"]["code"]) == (429, "queue_full") and int(r.headers["Retry-After"]) > 0
    grading.queue.set_intake_paused(True)
    r = submit(c, tok)
    assert (r.status_code, r.json["error"]["code"]) == (503, "intake_paused") and "Retry-After" in r.headers


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def test_password_login_session_cookie_and_csrf(app, accounts):
    c = app.test_client()
    accounts.user("alice", password="s3cret-password")
    page = c.get("/login")
    bad = c.post("/login", data={"username": "alice", "password": "wrong", "csrf_token": _csrf(page.text)})
    assert bad.status_code == 401 and "Wrong username or password" in bad.text
    no_csrf = c.post("/login", data={"username": "alice", "password": "s3cret-password"})
    assert no_csrf.status_code == 400
    ok = c.post("/login", data={"username": "alice", "password": "s3cret-password", "csrf_token": _csrf(page.text),
                                "next": "https://evil.example/"})
    assert ok.status_code == 302 and ok.headers["Location"] == "/"  # no open redirect
    cookie = c.get_cookie("practice_session")
    assert cookie.http_only and cookie.same_site == "Lax"
    me = c.get("/api/v1/me").json
    assert me["user"] == {"username": "alice", "staff": False}
    body = {"exercise": EX, "code": "x = 1", "mode": "gpu"}
    refused = c.post("/api/v1/submissions", json=body)
    assert (refused.status_code, refused.json["error"]["code"]) == (403, "csrf_failed")
    wrong = c.post("/api/v1/submissions", json=body, headers={"X-CSRF-Token": "nope"})
    assert wrong.status_code == 403
    made = c.post("/api/v1/submissions", json=body, headers={"X-CSRF-Token": me["csrf_token"]})
    assert made.status_code == 201
    c.post("/logout", data={"csrf_token": me["csrf_token"]})
    assert c.get("/api/v1/me").status_code == 401


def test_invite_link_creates_an_account_once(app, grading):
    from web import auth

    token = auth.create_link(grading.db, kind="invite", hours=1)
    c = app.test_client()
    page = c.get(f"/invite/{token}")
    assert page.status_code == 200
    form = {"username": "carol", "password": "longenough1", "password2": "longenough1", "csrf_token": _csrf(page.text)}
    short = c.post(f"/invite/{token}", data={**form, "password": "x", "password2": "x"})
    assert short.status_code == 400 and "8 to 1024" in short.text
    assert c.post(f"/invite/{token}", data=form).status_code == 302
    assert c.get("/api/v1/me").json["user"]["username"] == "carol"
    assert app.test_client().get(f"/invite/{token}").status_code == 404  # used
    with grading.db.session() as s:
        assert s.scalar(select(Invite.used_at)) is not None


def test_login_link_and_password_change_logs_out_other_sessions(app, accounts, grading):
    from web import auth

    accounts.user("dave", password="first-password")
    token = auth.create_link(grading.db, kind="login", username="dave")
    a, b = app.test_client(), app.test_client()
    page = a.get(f"/login/link/{token}")
    assert a.post(f"/login/link/{token}", data={"csrf_token": _csrf(page.text)}).status_code == 302
    assert a.post(f"/login/link/{token}", data={"csrf_token": _csrf(page.text)}).status_code == 404  # once
    login = b.get("/login")
    b.post("/login", data={"username": "dave", "password": "first-password", "csrf_token": _csrf(login.text)})
    assert b.get("/api/v1/me").status_code == 200
    acct = a.get("/account")
    a.post("/account/password", data={"current": "first-password", "password": "second-password",
                                      "csrf_token": _csrf(acct.text)})
    assert a.get("/api/v1/me").status_code == 200  # the session that changed it stays
    assert b.get("/api/v1/me").status_code == 401  # every other one is gone


def test_api_token_from_the_account_page_works_once_shown_and_can_be_revoked(app, accounts, grading):
    accounts.user("erin", password="erin-password")
    c = app.test_client()
    login = c.get("/login")
    c.post("/login", data={"username": "erin", "password": "erin-password", "csrf_token": _csrf(login.text)})
    page = c.get("/account")
    shown = c.post("/account/tokens", data={"name": "laptop", "csrf_token": _csrf(page.text)}).text
    token = re.search(r'id="new-token">(msu_[^<]+)<', shown).group(1)
    assert token not in c.get("/account").text  # shown once, in the answer to the POST
    anon = app.test_client()
    assert anon.get("/api/v1/submissions", headers=bearer(token)).status_code == 200
    with grading.db.session() as s:
        tid = s.scalar(select(ApiToken.id).where(ApiToken.name == "laptop"))
    c.post(f"/account/tokens/{tid}/revoke", data={"csrf_token": _csrf(shown)})
    assert anon.get("/api/v1/submissions", headers=bearer(token)).status_code == 401


def test_secrets_are_stored_hashed_only(app, accounts, grading):
    from web import auth

    tok = accounts.user("frank", password="frank-password-1")
    rtok = accounts.runner("gpu-host-1")
    link = auth.create_link(grading.db, kind="invite")
    with grading.db.engine.connect() as conn:
        dump = json.dumps([list(map(str, row)) for table in ("users", "api_tokens", "runners", "invites")
                           for row in conn.exec_driver_sql(f"SELECT * FROM {table}")])
    for secret in (tok, rtok, link, "frank-password-1"):
        assert secret not in dump and secret[4:] not in dump
    with grading.db.session() as s:
        assert s.scalar(select(User.password_hash)).startswith("scrypt:")
        assert s.scalar(select(Runner.token_hash)) == auth.hash_token(rtok)


def test_grading_status_says_whether_runners_are_here(app, accounts):
    c = app.test_client()
    assert c.get("/api/v1/grading").json["runners"] == 0
    rtok = accounts.runner("r1")
    c.post("/api/v1/runner/claim", json={"modes": ["gpu", "cpu"], "gpu": "NVIDIA H100"}, headers=bearer(rtok))
    status = c.get("/api/v1/grading").json
    assert (status["runners"], status["gpus"], status["modes"]) == (1, ["NVIDIA H100"], ["cpu", "gpu"])
    assert status["online"] == [{"runner": "runner r1", "gpu": "NVIDIA H100", "modes": ["cpu", "gpu"]}]


@pytest.mark.parametrize("path", ["/staff/"])
def test_staff_page_is_for_staff(app, accounts, path):
    accounts.user("learner1", password="learner1-pass-phrase")
    accounts.user("boss", password="boss-pass-phrase", staff=True)
    c = app.test_client()
    assert c.get(path).status_code == 302
    login = c.get("/login")
    c.post("/login", data={"username": "learner1", "password": "learner1-pass-phrase", "csrf_token": _csrf(login.text)})
    assert c.get(path).status_code == 403
    s = app.test_client()
    login = s.get("/login")
    s.post("/login", data={"username": "boss", "password": "boss-pass-phrase", "csrf_token": _csrf(login.text)})
    page = s.get(path)
    assert page.status_code == 200 and 'id="runners"' in page.text and 'id="queue"' in page.text

"""Issue 17's server attacked again once its credentials, runner door and headers had landed: the holes that
review found, each tried here as the attacker did, on SQLite and PostgreSQL (the ``app`` fixture's backends).

- the per-account login throttle counted a username padded with 250 spaces (which logs in as the account) as
  another account, so every padding gave ten more guesses;
- the per-address throttle counted each IPv6 address alone, though one host holds a whole /64 (2^64 addresses);
- a runner's verdict could say it judged another exercise, a full Submit for a Run, or the browser, and a
  verdict that left those out was stored as exercise ``""``, mode ``local``, whatever the job was;
- every page of a logged-in learner carried the session's CSRF token without ``Cache-Control: no-store``;
- a NUL byte in a token's name (and, in the malformed table of test_security.py, in a lease id, a claim's
  ``gpu`` or ``version``, the listing's ``?exercise=``) was PostgreSQL's 500;
- a ``next`` address with a line break was a 500 after the login, and after the one-time link was used up.
- an API token worked on the pages, without CSRF: a leaked one minted its successor on the Account page.

What held is listed in docs/deploy.md ("Tried as an attacker"); the few of those that no other test guarded are
guarded at the end of this file.
"""

from __future__ import annotations

import re

import pytest

from web.models import Submission

EX = "graph-capture-loop"
PASSWORD = "correct horse"  # the accounts fixture's
GOOD = {"status": "accepted", "tests": [{"name": "test_a", "status": "pass", "ms": 1.5}]}


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def _guess(client, username: str, password: str, csrf: str):
    return client.post("/login", data={"username": username, "password": password, "csrf_token": csrf})


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# --- the login throttle --------------------------------------------------------------------------------------


@pytest.mark.parametrize("pad", [" ", "\t", "\u3000"])
def test_a_username_padded_past_the_throttles_cut_is_counted_as_the_account(app, accounts, pad):
    """Before: the throttle cut the name at 256 characters and then stripped it, the login stripped first; 250
    spaces and ``alice`` logged in as alice but were counted as the account "", "a", "al" ... by turns."""
    accounts.user("alice")
    app.config["LOGIN_FAILURES_PER_ADDRESS"] = 10_000  # only the account's limit is under test
    c = app.test_client()
    csrf = _csrf(c.get("/login").text)
    limit = int(app.config["LOGIN_FAILURES_PER_ACCOUNT"])
    codes = [_guess(c, pad * (250 + i % 6) + "alice", f"guess {i}", csrf).status_code for i in range(limit + 6)]
    assert codes == [401] * limit + [429] * 6, codes
    r = _guess(c, "alice", PASSWORD, csrf)  # the right password, plainly typed: still throttled
    assert r.status_code == 429 and "Too many wrong passwords" in r.text


def _from(app, address: str):
    """A browser at ``address`` (as the socket, or a trusted proxy, reports it)."""
    c = app.test_client()
    c.environ_base["REMOTE_ADDR"] = address
    return c


def test_ipv6_addresses_of_one_64_share_the_address_limit_and_other_64s_do_not(app, accounts):
    """Before: each of 2001:db8:0:1::1, ::2, ... had its own 100 guesses; one host has 2^64 of them."""
    for name in ("alice", "bob", "carol", "dave"):
        accounts.user(name)
    app.config["LOGIN_FAILURES_PER_ADDRESS"] = 3
    codes = []
    for i, name in enumerate(["alice", "bob", "carol", "dave"]):
        c = _from(app, f"2001:db8:0:1::{i + 1:x}")
        codes.append(_guess(c, name, "wrong guess", _csrf(c.get("/login").text)).status_code)
    assert codes == [401, 401, 401, 429], codes
    other = _from(app, "2001:db8:0:2::1")  # the next /64: another household
    assert _guess(other, "dave", PASSWORD, _csrf(other.get("/login").text)).status_code == 302


def test_an_ipv4_mapped_address_is_counted_as_the_ipv4_address(app, accounts):
    """A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d: one bucket per IPv4 address, not one /64 for
    every IPv4 client (which would let one guesser lock the whole class out) and not a second bucket."""
    accounts.user("alice")
    accounts.user("bob")
    app.config["LOGIN_FAILURES_PER_ADDRESS"] = 2
    for address in ("198.51.100.7", "::ffff:198.51.100.7"):
        c = _from(app, address)
        assert _guess(c, "alice", "wrong guess", _csrf(c.get("/login").text)).status_code == 401
    c = _from(app, "198.51.100.7")
    assert _guess(c, "bob", PASSWORD, _csrf(c.get("/login").text)).status_code == 429
    neighbour = _from(app, "::ffff:198.51.100.8")
    assert _guess(neighbour, "bob", PASSWORD, _csrf(neighbour.get("/login").text)).status_code == 302


# --- the runner door: a verdict that passes the schema but lies ----------------------------------------------


@pytest.fixture
def claimed(app, accounts):
    """alice's Run (visible examples only) of EX, claimed by runner r1: (client, runner token, job)."""
    c = app.test_client()
    alice, runner = accounts.user("alice"), accounts.runner("r1")
    sid = c.post("/api/v1/submissions", json={"exercise": EX, "code": "x = 1", "mode": "gpu", "run": True},
                 headers=bearer(alice)).json["id"]
    job = c.post("/api/v1/runner/claim", json={"modes": ["gpu"]}, headers=bearer(runner)).json["job"]
    assert job["id"] == sid and job["run"] is True
    return c, runner, job


@pytest.mark.parametrize("field, value", [
    ("exercise", "graph-capture-buffer"),  # another exercise's verdict (a mixed-up or lying runner)
    ("run", False),  # a full Submit's verdict for a Run of the examples: "accepted" would mean solved
    ("mode", "browser"),  # a server verdict is never the browser's
])
def test_a_verdict_that_disagrees_with_its_job_is_refused_naming_the_field(claimed, grading, field, value):
    c, runner, job = claimed
    r = c.post(f"/api/v1/runner/jobs/{job['id']}/result", headers=bearer(runner),
               json={"lease_id": job["lease_id"], "verdict": {**GOOD, field: value}})
    assert r.status_code == 400, r.text
    err = r.json["error"]
    assert (err["code"], err["field"]) == ("bad_verdict", f"verdict.{field}")
    assert str(job["id"]) in err["message"]
    with grading.db.session() as s:
        sub = s.get(Submission, job["id"])
        assert (sub.state, sub.verdict, sub.lease_id) == ("running", None, job["lease_id"])  # the lease holds


@pytest.mark.parametrize("mode", ["gpu", "local"])  # judged on a GPU, or (a runner without one) graphs emulated
def test_a_verdict_of_the_job_is_stored_and_what_it_leaves_out_is_the_jobs(claimed, grading, mode):
    c, runner, job = claimed
    honest = {**GOOD, "exercise": EX, "run": True, "mode": mode}
    r = c.post(f"/api/v1/runner/jobs/{job['id']}/result", headers=bearer(runner),
               json={"lease_id": job["lease_id"], "verdict": honest})
    assert r.status_code == 200, r.text
    with grading.db.session() as s:
        stored = s.get(Submission, job["id"]).verdict_dict()
    assert (stored["exercise"], stored["run"], stored["mode"]) == (EX, True, mode)


def test_a_verdict_that_leaves_out_exercise_mode_and_run_is_stored_with_the_jobs(claimed, grading):
    """Before: stored as exercise "", mode "local", run false (the judge's defaults), whatever the job was."""
    c, runner, job = claimed
    r = c.post(f"/api/v1/runner/jobs/{job['id']}/result", headers=bearer(runner),
               json={"lease_id": job["lease_id"], "verdict": GOOD})
    assert r.status_code == 200, r.text
    with grading.db.session() as s:
        stored = s.get(Submission, job["id"]).verdict_dict()
    assert (stored["exercise"], stored["run"], stored["mode"]) == (EX, True, "gpu")


# --- what held, where nothing else guarded it ----------------------------------------------------------------


def test_headers_on_redirects_413_429_head_options_and_the_report_endpoint(app, accounts):
    """The security headers on answers the headers table does not visit (they held)."""
    accounts.user("alice")
    app.config["LOGIN_FAILURES_PER_ACCOUNT"] = 1
    c = app.test_client()
    csrf = _csrf(c.get("/login").text)
    _guess(c, "alice", "wrong guess", csrf)
    answers = {
        "redirect": c.get("/account"),
        "413": c.post("/csp-report", data="x" * 20000, content_type="application/csp-report"),
        "429": _guess(c, "alice", PASSWORD, csrf),
        "HEAD": c.head("/"),
        "OPTIONS": c.options("/api/v1/submissions"),
        "204": c.post("/csp-report", json={"csp-report": {"blocked-uri": "inline"}}),
    }
    want = {"redirect": 302, "413": 413, "429": 429, "HEAD": 200, "OPTIONS": 200, "204": 204}
    for what, r in answers.items():
        assert r.status_code == want[what], (what, r.status_code)
        for name in ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy",
                     "Cross-Origin-Opener-Policy"):
            assert name in r.headers, (what, name)
    assert answers["429"].headers["Cache-Control"] == "no-store" and int(answers["429"].headers["Retry-After"]) > 0


def test_every_page_made_for_a_logged_in_user_is_not_stored_by_any_cache(app, accounts):
    """Before: the exercise list, an exercise page and the staff page of a logged-in user carried the session's
    CSRF token (the nav's logout form) with no Cache-Control at all; only the account pages said no-store."""
    accounts.user("alice", staff=True)
    c = app.test_client()
    assert _guess(c, "alice", PASSWORD, _csrf(c.get("/login").text)).status_code == 302
    token = c.get("/api/v1/me").json["csrf_token"]
    for path in ("/", "/exercises/", f"/exercises/{EX}", "/staff/", "/api/v1/submissions"):
        r = c.get(path)
        assert r.status_code == 200, path
        assert r.headers.get("Cache-Control") == "no-store", (path, r.headers.get("Cache-Control"))
        if r.mimetype == "text/html":
            assert token in r.text, path  # the secret that makes it personal
    anonymous = app.test_client()
    for path in ("/", "/static/css/site.css"):  # nobody's: a cache may keep them
        r = anonymous.get(path)
        assert r.status_code == 200 and "no-store" not in r.headers.get("Cache-Control", ""), path


def test_a_token_name_with_a_nul_byte_makes_a_token_not_a_500(app, accounts, grading):
    """Before, on PostgreSQL: "PostgreSQL text fields cannot contain NUL (0x00) bytes", a 500 (the form's text is
    the learner's; control characters are dropped from a token's name)."""
    from sqlalchemy import select

    from web.models import ApiToken

    accounts.user("alice")
    c = app.test_client()
    assert _guess(c, "alice", PASSWORD, _csrf(c.get("/login").text)).status_code == 302
    token = c.get("/api/v1/me").json["csrf_token"]
    r = c.post("/account/tokens", data={"name": "laptop\x00\x1b[31m\u2028", "csrf_token": token})
    assert r.status_code == 200 and "msu_" in r.text
    with grading.db.session() as s:
        assert s.scalars(select(ApiToken.name).where(ApiToken.name.like("laptop%"))).all() == ["laptop[31m"]


@pytest.mark.parametrize("target", ["/\r\nSet-Cookie: planted=1", "/exercises/\n", "/\x00x", "/\u2028"])
def test_a_next_address_with_control_characters_is_the_home_page_not_a_500(app, accounts, grading, target):
    """Before: ``next`` with a line break logged the learner in and then failed writing ``Location`` (a 500); on the
    one-time login link, after the link had been used up, so the learner lost it too. (A NUL byte or a line
    separator went into the address percent-encoded: the home page now too.)"""
    from web import auth

    accounts.user("alice")
    c = app.test_client()
    r = c.post("/login", data={"username": "alice", "password": PASSWORD, "next": target,
                               "csrf_token": _csrf(c.get("/login").text)})
    assert (r.status_code, r.headers["Location"]) == (302, "/")
    link = auth.create_link(grading.db, kind="login", username="alice")
    c = app.test_client()
    r = c.post(f"/login/link/{link}", data={"next": target, "csrf_token": _csrf(c.get(f"/login/link/{link}").text)})
    assert (r.status_code, r.headers["Location"]) == (302, "/")
    assert c.get("/api/v1/me").json["user"]["username"] == "alice"


def test_a_verdict_whose_counts_and_status_disagree_with_its_tests_is_stored_recounted(claimed, grading):
    """Held: ``passed: 99`` and ``accepted`` over a failed test are stored as what the tests say."""
    c, runner, job = claimed
    lie = {"status": "accepted", "passed": 99, "failed": 0, "total": 99,
           "tests": [{"name": "test_a", "status": "pass"}, {"name": "test_b", "status": "fail"}]}
    r = c.post(f"/api/v1/runner/jobs/{job['id']}/result", headers=bearer(runner),
               json={"lease_id": job["lease_id"], "verdict": lie})
    assert r.status_code == 200, r.text
    with grading.db.session() as s:
        sub = s.get(Submission, job["id"])
        stored = sub.verdict_dict()
    assert (sub.result, stored["status"], stored["passed"], stored["failed"], stored["total"]) == \
        ("wrong_answer", "wrong_answer", 1, 1, 2)


@pytest.mark.parametrize("password", ["\u3000" * 8, "\u00a0" * 10, "\u2003\u2002" * 5, "\u200b" * 12, "\u2800" * 10,
                                      "\u3164" * 10, "\ufeff" * 10])
def test_blank_and_invisible_unicode_passwords_are_refused(password):
    """Held: Unicode spaces are spaces to ``str.strip``; invisible characters repeated are zxcvbn's repeats."""
    from web.passwords import password_problem

    assert password_problem(password, "alice") is not None


def test_zxcvbn_never_sees_more_than_its_cap_of_a_long_password(monkeypatch):
    """Held: a 1024-character password is judged by its first ``ZXCVBN_MAX`` characters (zxcvbn's time grows with
    the length; at the cap the slowest input tried, repeated dates, took about 40 ms)."""
    from web import passwords

    seen = []
    real = passwords.zxcvbn
    monkeypatch.setattr(passwords, "zxcvbn", lambda text, **kw: seen.append(len(text)) or real(text, **kw))
    passwords.password_problem("19901231" * 128, "alice")
    assert seen == [passwords.ZXCVBN_MAX]


def test_an_api_token_cannot_mint_its_successor_or_drive_the_staff_forms(app, accounts, grading):
    """Before: ``Authorization: Bearer`` worked on the pages, without CSRF: a leaked token minted a new token on the
    Account page (which outlived revoking the leaked one), revoked the owner's others, and a staff token paused
    intake on the staff page. Pages take the session cookie only now; the API still takes the token."""
    from sqlalchemy import func, select

    from web.models import ApiToken

    token, staff = accounts.user("alice"), accounts.user("root", staff=True)
    c = app.test_client()
    for method, path, who in [("POST", "/account/tokens", token), ("GET", "/account", token),
                              ("POST", "/account/tokens/1/revoke", token), ("POST", "/account/password", token),
                              ("POST", "/staff/intake", staff), ("GET", "/staff/", staff)]:
        r = c.open(path, method=method, data={"name": "successor", "paused": "1"}, headers=bearer(who))
        assert r.status_code == 403 and "API tokens work on the API" in r.text, (method, path, r.status_code)
    with grading.db.session() as s:
        assert s.scalar(select(func.count()).select_from(ApiToken).where(ApiToken.revoked_at.is_(None))) == 2
    assert not grading.queue.intake_paused()
    assert c.get("/api/v1/me", headers=bearer(token)).json["user"]["username"] == "alice"

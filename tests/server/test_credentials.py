"""The lifetime of credentials, tried as an attacker would: a session cookie replayed after logout, a password
change or ``users disable``; an API token minted with a stolen session; a new token read out of the signed
cookie; password guessing (one account, one address, many at once); an invitation spent on a taken username;
trivial passwords; cached pages with secrets; a session cookie sent over plain http. On SQLite and
PostgreSQL where the database keeps the state."""

from __future__ import annotations

import datetime as dt
import re
import threading

import pytest
from sqlalchemy import func, select, update

from web.models import ApiToken, Invite, LoginFailure, LoginSession, User

EX = "graph-capture-loop"
PASSWORD = "correct horse"  # the accounts fixture's


def _csrf(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def _login(client, username: str, password: str = PASSWORD, **kw):
    page = client.get("/login", **kw)
    return client.post("/login", data={"username": username, "password": password, "csrf_token": _csrf(page.text)},
                       **kw)


def _cookie(client) -> str:
    return client.get_cookie("practice_session").value


def _with_cookie(app, value: str):
    """A new client (another machine) holding a copy of a session cookie."""
    c = app.test_client()
    c.set_cookie("practice_session", value)
    return c


def _token_count(grading) -> int:
    with grading.db.session() as s:
        return s.scalar(select(func.count()).select_from(ApiToken))


# --- sessions -----------------------------------------------------------------------------------------------


def test_logout_ends_the_session_a_copied_cookie_reads_nothing_and_mints_no_token(app, accounts, grading):
    accounts.user("alice")
    c = app.test_client()
    assert _login(c, "alice").status_code == 302
    stolen = _cookie(c)
    me = c.get("/api/v1/me").json
    c.post("/logout", data={"csrf_token": me["csrf_token"]})
    thief = _with_cookie(app, stolen)
    r = thief.get("/api/v1/me")
    assert (r.status_code, r.json["error"]["code"]) == (401, "unauthorized")
    before = _token_count(grading)
    r = _with_cookie(app, stolen).post("/account/tokens", data={"name": "mine now", "csrf_token": me["csrf_token"]})
    assert r.status_code == 302 and "/login" in r.headers["Location"]
    assert _token_count(grading) == before
    with grading.db.session() as s:
        assert s.scalar(select(func.count()).select_from(LoginSession)) == 0


def test_a_password_change_ends_every_other_session_and_revokes_api_tokens_by_default(app, accounts, grading):
    accounts.user("bob")
    mine, other = app.test_client(), app.test_client()
    _login(mine, "bob")
    _login(other, "bob")
    stolen = _cookie(other)
    page = other.get("/account")
    minted = re.search(r'id="new-token">(msu_[^<]+)<', other.post(
        "/account/tokens", data={"name": "attacker", "csrf_token": _csrf(page.text)}).text).group(1)
    anon = app.test_client()
    assert anon.get("/api/v1/me", headers={"Authorization": f"Bearer {minted}"}).status_code == 200
    acct = mine.get("/account")
    assert 'value="revoke" checked' in acct.text  # the default, in the form
    r = mine.post("/account/password", data={"current": PASSWORD, "password": "a new pass phrase",
                                             "tokens": "revoke", "csrf_token": _csrf(acct.text)})
    assert r.status_code == 302
    assert "API tokens revoked" in mine.get("/account").text
    assert mine.get("/api/v1/me").status_code == 200  # the session that changed it goes on (with a new key)
    assert _cookie(mine) != stolen
    assert _with_cookie(app, stolen).get("/api/v1/me").status_code == 401
    assert other.get("/api/v1/me").status_code == 401
    assert anon.get("/api/v1/me", headers={"Authorization": f"Bearer {minted}"}).status_code == 401
    assert _login(app.test_client(), "bob", "a new pass phrase").status_code == 302


def test_a_password_change_can_keep_the_api_tokens_when_asked(app, accounts):
    token = accounts.user("carol")
    c = app.test_client()
    _login(c, "carol")
    acct = c.get("/account")
    c.post("/account/password", data={"current": PASSWORD, "password": "another pass phrase", "tokens": "keep",
                                      "csrf_token": _csrf(acct.text)})
    assert "API tokens kept" in c.get("/account").text
    assert app.test_client().get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_admin_password_and_disable_commands_end_sessions(app, accounts, grading):
    token = accounts.user("dave")
    accounts.user("erin")
    d, e = app.test_client(), app.test_client()
    _login(d, "dave")
    _login(e, "erin")
    dave_cookie, erin_cookie = _cookie(d), _cookie(e)
    cli = app.test_cli_runner()
    r = cli.invoke(args=["users", "password", "dave", "--password-stdin"], input="a fresh pass phrase\n")
    assert r.exit_code == 0 and "API tokens revoked" in r.output, r.output
    assert _with_cookie(app, dave_cookie).get("/api/v1/me").status_code == 401
    assert app.test_client().get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    r = cli.invoke(args=["users", "password", "dave", "--password-stdin"], input="password\n")
    assert r.exit_code != 0 and "too easy to guess" in r.output
    r = cli.invoke(args=["users", "disable", "erin"])
    assert r.exit_code == 0
    assert _with_cookie(app, erin_cookie).get("/api/v1/me").status_code == 401
    with grading.db.session() as s:
        erin = s.scalar(select(User.id).where(User.username == "erin"))
        assert s.scalar(select(func.count()).select_from(LoginSession).where(LoginSession.user_id == erin)) == 0


def test_a_session_ends_when_its_days_are_over(app, accounts, grading):
    accounts.user("fay")
    c = app.test_client()
    _login(c, "fay")
    assert c.get("/api/v1/me").status_code == 200
    with grading.db.session() as s:
        row = s.scalar(select(LoginSession))
        assert abs((row.expires_at - row.created_at).total_seconds() - 14 * 86400) < 5
        row.expires_at = row.created_at  # as if 14 days had gone by
    assert c.get("/api/v1/me").status_code == 401


def test_a_forged_or_old_style_cookie_logs_nobody_in(app, accounts, grading):
    accounts.user("gus")
    with grading.db.session() as s:
        uid = s.scalar(select(User.id))
    ser = app.session_interface.get_signing_serializer(app)
    for payload in ({"uid": uid, "epoch": 0, "csrf": "x"}, {"sid": "x" * 43}, {"sid": 12}, {"sid": ["a"]},
                    {"sid": "y" * 5000}):
        r = _with_cookie(app, ser.dumps(payload)).get("/api/v1/me")
        assert r.status_code == 401, payload


def test_credential_alive_follows_revocation_and_logout(app, accounts):
    """What a live event stream asks again and again: is the credential that opened it still good?"""
    from flask import g

    from web import auth

    token = accounts.user("hal")
    c = app.test_client()
    _login(c, "hal")
    with app.test_request_context(headers={"Authorization": f"Bearer {token}"}):
        auth.current_user()
        by_token = g.credential
    with app.test_request_context(headers={"Cookie": f"practice_session={_cookie(c)}"}):
        auth.current_user()
        by_session = g.credential
    assert by_token[0] == "token" and by_session[0] == "session"
    with app.app_context():
        assert auth.credential_alive(by_token) and auth.credential_alive(by_session)
    with app.test_request_context():
        tid = by_token[1]
        with_uid = auth.find_user(app.extensions["grading"].db, "hal").id
        auth.revoke_api_token(app.extensions["grading"].db, with_uid, tid)
        assert not auth.credential_alive(by_token)
    c.post("/logout", data={"csrf_token": c.get("/api/v1/me").json["csrf_token"]})
    with app.app_context():
        assert not auth.credential_alive(by_session)
        assert not auth.credential_alive(None)


# --- a new API token is never in the cookie --------------------------------------------------------------------


def test_a_new_api_token_is_shown_in_the_answer_only_never_in_the_cookie(app, accounts):
    accounts.user("ida")
    c = app.test_client()
    _login(c, "ida")
    page = c.get("/account")
    r = c.post("/account/tokens", data={"name": "laptop", "csrf_token": _csrf(page.text)})
    assert r.status_code == 200 and r.headers["Cache-Control"] == "no-store"
    token = re.search(r'id="new-token">(msu_[^<]+)<', r.text).group(1)
    assert all(token not in h for h in r.headers.getlist("Set-Cookie"))
    session = app.session_interface.get_signing_serializer(app).loads(_cookie(c))
    assert token not in repr(session) and set(session) <= {"sid", "csrf", "_permanent"}
    assert token not in c.get("/account").text


# --- login throttling -----------------------------------------------------------------------------------------


def test_forty_wrong_passwords_then_the_right_one_does_not_log_in(app, accounts):
    accounts.user("jo")
    c = app.test_client()
    codes = [_login(c, "jo", f"wrong guess {i}").status_code for i in range(40)]
    assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}
    r = _login(c, "jo")
    assert r.status_code == 429
    assert 0 < int(r.headers["Retry-After"]) <= 900
    assert "Too many wrong passwords" in r.text and "try again in 15 minutes" in r.text
    assert c.get("/api/v1/me").status_code == 401
    # from another address too: the account is what is guessed
    other = app.test_client()
    assert _login(other, "jo", environ_base={"REMOTE_ADDR": "10.9.8.7"}).status_code == 429


def test_the_throttle_counts_per_address_across_accounts_and_forgets_after_the_window(app, accounts, grading):
    app.config.update(LOGIN_FAILURES_PER_ADDRESS=5)
    accounts.user("kim")
    guesser = {"REMOTE_ADDR": "192.0.2.1"}
    c = app.test_client()
    codes = [_login(c, f"user{i}", "nope nope", environ_base=guesser).status_code for i in range(8)]
    assert codes == [401] * 5 + [429] * 3
    assert _login(c, "kim", environ_base=guesser).status_code == 429
    assert _login(app.test_client(), "kim", environ_base={"REMOTE_ADDR": "192.0.2.2"}).status_code == 302
    with grading.db.session() as s:  # as if the 15 minutes had gone by
        s.execute(update(LoginFailure).values(at=LoginFailure.at - dt.timedelta(seconds=901)))
    assert _login(c, "kim", environ_base=guesser).status_code == 302


def test_a_right_password_forgets_its_own_typos_not_a_guessers(app, accounts):
    app.config.update(LOGIN_FAILURES_PER_ACCOUNT=3)
    accounts.user("lee")
    me, guesser = {"REMOTE_ADDR": "198.51.100.1"}, {"REMOTE_ADDR": "198.51.100.66"}
    for _ in range(2):
        assert _login(app.test_client(), "lee", "typo typo", environ_base=me).status_code == 401
    assert _login(app.test_client(), "lee", environ_base=me).status_code == 302  # forgets those two
    for _ in range(2):
        assert _login(app.test_client(), "lee", "guess guess", environ_base=guesser).status_code == 401
    assert _login(app.test_client(), "lee", environ_base=me).status_code == 302
    assert _login(app.test_client(), "lee", "guess again", environ_base=guesser).status_code == 401
    assert _login(app.test_client(), "lee", "and again", environ_base=guesser).status_code == 429  # 3 counted


def test_guesses_at_once_cannot_slip_past_the_limit_together(app, accounts):
    accounts.user("max")
    codes: list[int] = []

    def guess(i: int) -> None:
        codes.append(_login(app.test_client(), "max", f"parallel guess {i}").status_code)

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(codes) == 24 and set(codes) <= {401, 429}
    checked = codes.count(401)
    assert 1 <= checked <= 10, codes  # at most the limit of passwords was even checked
    # (refused tries are not counted: of guesses at once, some may be refused early) the rest of the limit, no more
    more = [_login(app.test_client(), "max", f"serial guess {i}").status_code for i in range(12)]
    assert more == [401] * (10 - checked) + [429] * (2 + checked), (codes, more)
    assert _login(app.test_client(), "max").status_code == 429


def test_the_current_password_on_the_account_page_is_throttled_too(app, accounts, grading):
    from web import auth

    app.config.update(LOGIN_FAILURES_PER_ACCOUNT=3)
    accounts.user("ned")
    c = app.test_client()
    _login(c, "ned")
    for i in range(3):
        acct = c.get("/account")
        r = c.post("/account/password", data={"current": f"not it {i}", "password": "brand new phrase here",
                                              "csrf_token": _csrf(acct.text)})
        assert r.status_code == 302
        assert "current password is wrong" in c.get("/account").text
    acct = c.get("/account")
    r = c.post("/account/password", data={"current": PASSWORD, "password": "brand new phrase here",
                                          "csrf_token": _csrf(acct.text)})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0 and "Too many wrong passwords" in r.text
    assert auth.verify_login(grading.db, "ned", PASSWORD) is not None  # not changed


def test_behind_a_trusted_proxy_the_forwarded_address_is_counted_and_otherwise_ignored(db_url, tmp_path):
    from web import auth, create_app

    def site(proxies: int):
        return create_app({"DATABASE_URL": db_url, "TESTING": True, "SECRET_KEY": "t", "REAPER_SECONDS": 0,
                           "SIMILARITY_SECONDS": 0, "SESSION_COOKIE_SECURE": False, "TRUSTED_PROXIES": proxies,
                           "LOGIN_FAILURES_PER_ADDRESS": 2})

    direct, proxied = site(0), site(1)
    try:
        auth.create_user(direct.extensions["grading"].db, "olga", PASSWORD)
        # no trusted proxy: a forged X-Forwarded-For changes nothing, the peer's address is counted
        for i in range(2):
            forged = {"X-Forwarded-For": f"203.0.113.{i}"}
            assert _login(direct.test_client(), f"x{i}", "wrong wrong", headers=forged).status_code == 401
        assert _login(direct.test_client(), "olga", headers={"X-Forwarded-For": "203.0.113.99"}).status_code == 429
        # one trusted proxy (its own address is 127.0.0.1 for every learner): each learner's address counts
        for i in range(4):
            fwd = {"X-Forwarded-For": f"203.0.113.{10 + i}"}
            assert _login(proxied.test_client(), f"y{i}", "wrong wrong", headers=fwd).status_code == 401
    finally:
        for a in (direct, proxied):
            a.extensions["grading"].hub.stop()
            a.extensions["grading"].db.dispose()


def test_hostile_login_input_is_refused_without_a_500(app, accounts):
    accounts.user("pat")
    c = app.test_client()
    page = c.get("/login")
    csrf = _csrf(page.text)
    for form in ({"username": "p" * 100_000, "password": "x"}, {"username": "pat", "password": "x" * 2_000_000},
                 {"username": "pat\x00", "password": "y"}, {"username": "", "password": ""}, {},
                 {"username": ["a", "b"], "password": "z"}):
        r = c.post("/login", data={**form, "csrf_token": csrf})
        assert r.status_code in (401, 413, 429), (list(form), r.status_code)


# --- invitations and the password rule --------------------------------------------------------------------------


def test_an_invitation_survives_a_taken_username_or_a_refused_password(app, accounts, grading):
    from web import auth

    accounts.user("quinn")
    token = auth.create_link(grading.db, kind="invite", hours=1)
    c = app.test_client()
    page = c.get(f"/invite/{token}")
    assert page.headers["Cache-Control"] == "no-store"
    form = {"password": "plenty long phrase", "password2": "plenty long phrase", "csrf_token": _csrf(page.text)}
    taken = c.post(f"/invite/{token}", data={**form, "username": "quinn"})
    assert taken.status_code == 400 and "is taken" in taken.text
    weak = c.post(f"/invite/{token}", data={**form, "username": "rae", "password": "12345678",
                                             "password2": "12345678"})
    assert weak.status_code == 400 and "too easy to guess" in weak.text
    with grading.db.session() as s:
        assert s.scalar(select(Invite.used_at)) is None
    assert c.post(f"/invite/{token}", data={**form, "username": "rae"}).status_code == 302
    assert c.get("/api/v1/me").json["user"]["username"] == "rae"
    assert app.test_client().get(f"/invite/{token}").status_code == 404  # now used
    with grading.db.session() as s:
        assert s.scalar(select(Invite.used_at)) is not None


def test_two_people_on_one_invitation_make_one_account(app, grading):
    from web import auth

    token = auth.create_link(grading.db, kind="invite", hours=1)
    made: list[str] = []

    def accept(name: str) -> None:
        try:
            auth.accept_invite(grading.db, token, name, "plenty long phrase")
            made.append(name)
        except auth.AccountError:
            pass

    threads = [threading.Thread(target=accept, args=(f"twin{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1
    with grading.db.session() as s:
        assert s.scalar(select(func.count()).select_from(User)) == 1


@pytest.mark.parametrize("password", [" " * 8, "password", "12345678", "Password1", "qwertyuiop", "iloveyou1",
                                      "sam12345", "samsamsam"])
def test_trivial_and_common_passwords_are_refused_with_a_clear_message(app, grading, password):
    from web import auth

    with pytest.raises(auth.AccountError, match=r"too easy to guess|only spaces|the username"):
        auth.create_user(grading.db, "sam", password)
    assert auth.find_user(grading.db, "sam") is None
    token = auth.create_link(grading.db, kind="invite", hours=1)
    c = app.test_client()
    page = c.get(f"/invite/{token}")
    r = c.post(f"/invite/{token}", data={"username": "sam", "password": password, "password2": password,
                                         "csrf_token": _csrf(page.text)})
    assert r.status_code == 400 and re.search(r"too easy to guess|only spaces|the username", r.text)


def test_the_username_itself_is_not_a_password(grading):
    from web import auth

    with pytest.raises(auth.AccountError, match="cannot be the username"):
        auth.create_user(grading.db, "theodora-smith", "Theodora-Smith")
    auth.create_user(grading.db, "theodora-smith", "violet kettle drum")


def test_a_weak_new_password_on_the_account_page_is_refused_and_nothing_changes(app, accounts):
    accounts.user("uma")
    c = app.test_client()
    _login(c, "uma")
    acct = c.get("/account")
    r = c.post("/account/password", data={"current": PASSWORD, "password": "        ",
                                          "csrf_token": _csrf(acct.text)})
    assert r.status_code == 302 and "only spaces" in c.get("/account").text
    assert c.get("/api/v1/me").status_code == 200
    assert _login(app.test_client(), "uma").status_code == 302


# --- caching and cookies --------------------------------------------------------------------------------------


def test_pages_with_secrets_are_not_stored_by_any_cache(app, accounts, grading):
    from web import auth

    accounts.user("vic")
    link = auth.create_link(grading.db, kind="login", username="vic")
    invite = auth.create_link(grading.db, kind="invite")
    c = app.test_client()
    for path in ("/login", f"/login/link/{link}", f"/invite/{invite}", "/api/v1/me"):
        assert c.get(path).headers.get("Cache-Control") == "no-store", path
    _login(c, "vic")
    for path in ("/account", "/api/v1/me"):
        assert c.get(path).headers.get("Cache-Control") == "no-store", path


def test_the_session_cookie_is_secure_by_default_and_not_in_the_embedded_mode(db_url, tmp_path, monkeypatch):
    import werkzeug.serving

    from web import auth, create_app, embedded

    app = create_app({"DATABASE_URL": db_url, "SECRET_KEY": "t", "REAPER_SECONDS": 0, "SIMILARITY_SECONDS": 0})
    try:
        assert app.config["SESSION_COOKIE_SECURE"] is True
        auth.create_user(app.extensions["grading"].db, "wes", PASSWORD)
        r = _login(app.test_client(), "wes")
        cookie = next(h for h in r.headers.getlist("Set-Cookie") if h.startswith("practice_session="))
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    finally:
        app.extensions["grading"].hub.stop()
        app.extensions["grading"].db.dispose()
    served = {}
    monkeypatch.setenv("MINISGL_PRACTICE_INSTANCE_PATH", str(tmp_path / "embedded"))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setattr(werkzeug.serving, "run_simple", lambda host, port, wsgi, **kw: served.update(app=wsgi))
    assert embedded.serve("127.0.0.1", 0, runner=False) == 0
    assert served["app"].config["SESSION_COOKIE_SECURE"] is False  # plain http on this machine
    served["app"].extensions["grading"].hub.stop()
    served["app"].extensions["grading"].db.dispose()

"""Event streams under attack and under load: the caps on open streams (per account, site-wide, counted in the
database), slots freed when a stream ends or its process dies, credentials re-checked on a live stream, and
streams that do not starve the site's other requests (a real gunicorn site)."""

from __future__ import annotations

import datetime as dt
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from sqlalchemy import func, select

from tests.server.pieces import wait_for
from web import auth, sessions
from web.db import utcnow
from web.models import EventStream, User
from web.slots import STALE_S

EX = "graph-capture-loop"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def submit(client, token) -> int:
    r = client.post("/api/v1/submissions", json={"exercise": EX, "code": "x = 1", "mode": "gpu"},
                    headers=bearer(token))
    assert r.status_code == 201, r.json
    return r.json["id"]


def open_stream(client, sid: int, token: str | None = None):
    """The stream's response, its body not read (the view has run: the slot is taken or refused)."""
    return client.get(f"/api/v1/submissions/{sid}/events", headers=bearer(token) if token else {}, buffered=False)


def slots_held(grading) -> int:
    with grading.db.session() as s:
        return s.scalar(select(func.count()).select_from(EventStream))


def test_over_the_stream_cap_a_429_json_with_retry_after_and_a_freed_slot_is_taken_again(app, grading, accounts):
    c = app.test_client()
    alice, bob = accounts.user("alice"), accounts.user("bob")
    sid, bob_sid = submit(c, alice), submit(c, bob)
    held = [open_stream(c, sid, alice) for _ in range(8)]
    assert [r.status_code for r in held] == [200] * 8 and slots_held(grading) == 8
    over = open_stream(c, sid, alice)
    assert over.status_code == 429 and over.mimetype == "application/json"
    assert over.json["error"]["code"] == "too_many_streams" and "8 event streams open" in over.json["error"]["message"]
    assert int(over.headers["Retry-After"]) >= 1 and over.json["error"]["retry_after"] >= 1
    assert slots_held(grading) == 8  # a refusal takes nothing

    mine = open_stream(c, bob_sid, bob)  # the cap is per account: bob still gets one
    assert mine.status_code == 200
    grading.slots.total = 9  # the site-wide cap, reached
    full = open_stream(c, bob_sid, bob)
    assert full.status_code == 429 and full.json["error"]["code"] == "streams_full"

    held.pop().close()  # a stream whose response is closed frees its slot at once
    again = open_stream(c, sid, alice)
    assert again.status_code == 200 and slots_held(grading) == 9
    for r in [*held, mine, again]:
        r.close()
    assert slots_held(grading) == 0


def test_a_stream_that_ends_by_itself_frees_its_slot(app, grading, accounts):
    c = app.test_client()
    alice = accounts.user("alice")
    sid = submit(c, alice)
    assert c.post(f"/api/v1/submissions/{sid}/cancel", headers=bearer(alice)).status_code == 200
    r = c.get(f"/api/v1/submissions/{sid}/events", headers=bearer(alice), buffered=True)  # cancelled, the end
    assert "event: cancelled" in r.get_data(as_text=True)
    assert slots_held(grading) == 0


def test_the_slots_of_a_dead_process_stop_counting_and_live_ones_are_renewed(app, grading, accounts):
    c = app.test_client()
    alice = accounts.user("alice")
    sid = submit(c, alice)
    long_ago = utcnow() - dt.timedelta(seconds=STALE_S + 1)
    with grading.db.session() as s:  # eight slots of a worker that was killed: nobody renews them
        uid = s.scalar(select(User.id).where(User.username == "alice"))
        s.add_all(EventStream(user_id=uid, submission_id=sid, opened_at=long_ago, seen_at=long_ago) for _ in range(8))
    live = open_stream(c, sid, alice)
    assert live.status_code == 200 and slots_held(grading) == 1  # the dead slots were deleted
    with grading.db.session() as s:
        s.execute(EventStream.__table__.update().values(seen_at=long_ago))
    grading.slots.renew()  # what this process does every RENEW_S for its own slots
    with grading.db.session() as s:
        assert s.scalar(select(EventStream.seen_at)) > long_ago
    live.close()


def _read_until_end(response, out: list[str]) -> None:
    for chunk in response.response:
        out.append(chunk.decode() if isinstance(chunk, bytes) else chunk)


@pytest.mark.parametrize("how", ["token revoked", "user disabled", "session ended"])
def test_a_live_stream_ends_when_its_credential_is_gone(app, grading, accounts, how):
    app.config["STREAM_RECHECK_SECONDS"] = 0.2
    c = app.test_client()
    token = accounts.user("alice")
    sid = submit(c, token)
    if how == "session ended":
        user = auth.find_user(grading.db, "alice")
        with c.session_transaction() as sess:  # a logged-in browser: a server-side session's key in the cookie
            sess["sid"] = sessions.start_session(grading.db, user.id, dt.timedelta(days=1))
        r = open_stream(c, sid)
    else:
        r = open_stream(c, sid, token)
    assert r.status_code == 200
    got: list[str] = []
    reader = threading.Thread(target=_read_until_end, args=(r, got), daemon=True)
    reader.start()
    wait_for(lambda: any("event: queued" in x for x in got), 10, "the queued event")
    time.sleep(0.5)
    assert reader.is_alive()  # still open while the credential holds
    if how == "token revoked":
        with grading.db.session() as s:
            token_id = s.scalar(select(auth.ApiToken.id))
        assert auth.revoke_api_token(grading.db, user_id=auth.find_user(grading.db, "alice").id, token_id=token_id)
    elif how == "user disabled":
        assert auth.disable_user(grading.db, "alice")
    else:
        auth.set_password(grading.db, "alice", "another horse", revoke_tokens=False)  # ends every session
    reader.join(5)
    assert not reader.is_alive(), f"the stream went on after: {how}"
    assert not any("event: done" in x or "event: cancelled" in x for x in got)  # no event: it just ends
    r.close()
    assert slots_held(grading) == 0
    assert c.get(f"/api/v1/submissions/{sid}/events", headers=bearer(token) if how != "session ended"
                 else {}).status_code == 401  # the browser's reconnection


# --- a real gunicorn site ---------------------------------------------------------------------------------------


def _site_accounts(db_url: str, names: list[str]) -> dict[str, str]:
    from web.db import open_database

    db = open_database(db_url)
    try:
        tokens = {}
        for n in names:
            auth.create_user(db, n, "correct horse")
            tokens[n] = auth.create_api_token(db, n)
        return tokens
    finally:
        db.dispose()


def _submit(url: str, token: str) -> dict:
    r = requests.post(f"{url}/api/v1/submissions", json={"exercise": EX, "code": "x = 1", "mode": "gpu"},
                      headers=bearer(token), timeout=30)
    r.raise_for_status()
    return r.json()


def test_sixteen_open_streams_of_one_learner_do_not_stop_another_learners_request(db_url, site_factory):
    """One worker, as a small site runs: 16 streams held (the cap raised to let them all in) and another
    learner's requests are answered."""
    tokens = _site_accounts(db_url, ["mallory", "alice"])
    site = site_factory(db_url, workers=1, env={"MINISGL_PRACTICE_STREAMS_PER_USER": "16",
                                                 "MINISGL_PRACTICE_RATE_LIMIT": "1000"})
    sub = _submit(site.url, tokens["mallory"])
    streams = []
    try:
        with ThreadPoolExecutor(16) as pool:
            streams = list(pool.map(lambda _: requests.get(site.url + sub["links"]["events"], stream=True,
                                                           headers=bearer(tokens["mallory"]), timeout=(5, 60)),
                                    range(16)))
        assert [r.status_code for r in streams] == [200] * 16
        for r in streams:  # each has started: its first event came
            lines = r.iter_lines(chunk_size=1)
            assert [next(lines) for _ in range(3)] == [b"retry: 2000", b"", b"id: 1"]
            assert next(lines) == b"event: queued"
        r = requests.get(f"{site.url}/api/v1/submissions", headers=bearer(tokens["alice"]), timeout=5)
        assert r.status_code == 200 and r.json()["submissions"] == []
        assert requests.get(f"{site.url}/exercises/{EX}", timeout=5).status_code == 200
        assert _submit(site.url, tokens["alice"])["status"] == "queued"
    finally:
        for r in streams:
            r.close()


def test_the_cap_holds_across_gunicorn_workers_and_a_closed_stream_frees_its_slot(db_url, site_factory):
    tokens = _site_accounts(db_url, ["alice"])
    site = site_factory(db_url, workers=2, env={"MINISGL_PRACTICE_SSE_HEARTBEAT_SECONDS": "0.5"})
    sub = _submit(site.url, tokens["alice"])
    url, head = site.url + sub["links"]["events"], bearer(tokens["alice"])
    held = []
    try:
        for _ in range(8):  # new connections, spread over both workers
            held.append(requests.get(url, stream=True, headers={**head, "Connection": "close"}, timeout=(5, 60)))
        assert [r.status_code for r in held] == [200] * 8
        over = requests.get(url, headers=head, timeout=10)
        assert over.status_code == 429 and over.json()["error"]["code"] == "too_many_streams"
        assert over.headers["Retry-After"] == "1"
        held.pop().close()  # the client goes away: the server notices at its next write (a heartbeat)

        def reopened():
            r = requests.get(url, stream=True, headers=head, timeout=(5, 60))
            if r.status_code == 200:
                held.append(r)
                return True
            r.close()
            return False

        wait_for(reopened, 10, "the closed stream's slot to be free again", every=0.3)
    finally:
        for r in held:
            r.close()


def test_under_gevent_postgresql_queries_and_the_listen_hub_let_other_greenlets_run(pg):
    """psycopg 3 waits through gevent's patched select (from 3.1.14): a slow query or the hub's LISTEN in one
    greenlet must not stop the worker's others (every request and stream of a worker is a greenlet)."""
    import json
    import os
    import subprocess
    import sys

    from tests.server.pieces import ROOT

    r = subprocess.run([sys.executable, str(ROOT / "tests" / "server" / "gevent_probe.py"), pg.create_database()],
                       capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.splitlines()[-1])
    assert got["notified_s"] is not None and got["notified_s"] < 1.0, got
    assert got["ticks"] == 40 and got["max_gap_s"] < 0.5, got  # a blocked loop shows a gap of >= 1 s

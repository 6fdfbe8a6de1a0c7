"""Change notification for the queue: what one worker learns reaches the SSE streams and long-polls of all.

Every change to a submission (enqueued, claimed, finished, cancelled, requeued) calls ``changed(session)``
inside its transaction. On PostgreSQL that is ``pg_notify`` (delivered at commit, to every process that
listens); on SQLite, each process polls ``max(updated_at)`` a few times a second. Either way, the process
that made the change wakes its own waiters at commit at once.

Waiters never trust a notification's content: they wake up and re-read the database, so a lost
notification (a reconnect) costs at most one poll interval, never a missed state.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy import event, func, select, text
from sqlalchemy.orm import Session

from .db import Database

CHANNEL = "minisgl_submissions"
log = logging.getLogger(__name__)


class Hub:
    """A version counter that waiters block on; bumped by local commits and by the database."""

    def __init__(self, db: Database, poll_s: float = 0.5):
        self.db = db
        self.poll_s = poll_s
        self.version = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._stop = threading.Event()

    def poke(self) -> None:
        with self._cond:
            self.version += 1
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        """Block until the version differs from ``seen`` (or ``timeout`` s); return the current version."""
        self._ensure_started()
        with self._cond:
            self._cond.wait_for(lambda: self.version != seen, timeout=max(0.0, timeout))
            return self.version

    def stop(self) -> None:
        self._stop.set()

    def _ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                target = self._sqlite_poll if self.db.is_sqlite else self._pg_listen
                self._thread = threading.Thread(target=target, name="queue-hub", daemon=True)
                self._thread.start()

    def _fingerprint(self):
        with self.db.engine.connect() as conn:
            return conn.execute(select(func.max(text("updated_at"))).select_from(text("submissions"))).scalar()

    def _sqlite_poll(self) -> None:
        last = object()
        while not self._stop.is_set():
            try:
                fp = self._fingerprint()
                if fp != last:
                    last = fp
                    self.poke()
            except Exception as e:  # noqa: BLE001 - the database may be away for a while: keep polling
                log.debug("queue poll failed: %s", e)
            self._stop.wait(self.poll_s)

    def _pg_listen(self) -> None:
        import psycopg
        from sqlalchemy.engine import make_url

        u = make_url(self.db.url).set(drivername="postgresql")
        dsn = u.render_as_string(hide_password=False)
        while not self._stop.is_set():
            try:
                with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.poke()  # anything may have happened while we were not listening
                    while not self._stop.is_set():
                        got = False
                        for _ in conn.notifies(timeout=5.0):
                            got = True
                            self.poke()  # at once: the generator only ends at its timeout
                        if not got:
                            conn.execute("SELECT 1")  # notices a dead connection within the timeout
            except Exception as e:  # noqa: BLE001 - reconnect after the database comes back
                log.debug("queue listen failed: %s", e)
                self.poke()
                self._stop.wait(1.0)


def changed(session: Session, db: Database, hub: Hub | None) -> None:
    """Record that submissions changed in this transaction (call it before the commit)."""
    if not db.is_sqlite:
        session.execute(text("SELECT pg_notify(:c, '')"), {"c": CHANNEL})
    if hub is not None:
        event.listen(session, "after_commit", lambda _s: hub.poke(), once=True)


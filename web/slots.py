"""The caps on open event streams: per user and site-wide, counted in the database so that every worker sees them.

A stream takes a slot (a row of ``event_streams``) before its response starts, and frees it when the response
is closed: when the stream ends (done, cancelled, its hour, its credentials gone) or when the server notices the
client has gone (a write fails: within a heartbeat or two). Each process renews the ``seen_at``
of its own slots every ``RENEW_S`` in one statement; a slot not renewed for ``STALE_S`` (its process was killed)
no longer counts, and is deleted by a later stream opened. So the count is right across gunicorn workers and
hosts, and a crash frees its slots within ``STALE_S``.

Taking a slot is serialised per account (SQLite: the write lock; PostgreSQL: the user's row, ``FOR UPDATE``),
so that two streams of one account opened at once cannot both take its last slot. The site-wide count is not
serialised (a lock for every stream opened on the site made 300 at once queue for the database for seconds):
streams of different accounts opened in the same instant may pass ``total`` by as many as are being opened.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading

from sqlalchemy import case, delete, func, select, update

from .db import Database, utcnow
from .models import EventStream, User

RENEW_S = 10.0  # how often a process renews its slots
STALE_S = 3 * RENEW_S  # a slot not renewed for this long is a dead process's (no longer counted, then deleted)
OPENING = 4  # slots being taken at once by one process (each holds a database connection meanwhile)
log = logging.getLogger(__name__)


class Full(Exception):
    """No slot: ``code`` is ``too_many_streams`` (this user's cap) or ``streams_full`` (the site's)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


class Slots:
    """This process's view of the stream slots: takes, renews and frees them."""

    def __init__(self, db: Database, per_user: int, total: int):
        self.db, self.per_user, self.total = db, per_user, total
        self._mine: set[int] = set()
        self._lock = threading.Lock()
        self._opening = threading.BoundedSemaphore(OPENING)
        self._swept = dt.datetime.min  # when this process last deleted dead slots
        self._renewer: threading.Thread | None = None

    def take(self, user_id: int, submission_id: int) -> int:
        """A slot for a new stream of ``user_id`` (its id), or ``Full``. At most ``OPENING`` at once per process:
        a burst of streams opened (300 at once) must not take every pooled connection from other requests."""
        self._start_renewer()
        with self._opening, self.db.session(write_lock=True) as s:
            now = utcnow()
            if now - self._swept > dt.timedelta(seconds=RENEW_S):
                s.execute(delete(EventStream).where(EventStream.seen_at < now - dt.timedelta(seconds=STALE_S)))
                self._swept = now
            if not self.db.is_sqlite:
                s.execute(select(User.id).where(User.id == user_id).with_for_update())
            alive = EventStream.seen_at >= now - dt.timedelta(seconds=STALE_S)
            mine, every = s.execute(select(func.count(case((EventStream.user_id == user_id, 1))), func.count())
                                    .where(alive)).one()
            if mine >= self.per_user:
                raise Full("too_many_streams", f"You have {mine} event streams open, the most one account may "
                           "have: close one (another tab?), or poll GET /api/v1/submissions/<id> instead.")
            if every >= self.total:
                raise Full("streams_full", f"The site has {every} event streams open, the most it serves: try "
                           "again shortly, or poll GET /api/v1/submissions/<id> instead.")
            row = EventStream(user_id=user_id, submission_id=submission_id, opened_at=now, seen_at=now)
            s.add(row)
            s.flush()
            slot = row.id
        with self._lock:
            self._mine.add(slot)
        return slot

    def free(self, slot: int) -> None:
        """Free a slot (once; a second call does nothing). A database away leaves it to expire."""
        with self._lock:
            if slot not in self._mine:
                return
            self._mine.discard(slot)
        try:
            with self.db.session() as s:
                s.execute(delete(EventStream).where(EventStream.id == slot))
        except Exception as e:  # noqa: BLE001 - the slot expires after STALE_S anyway
            log.warning("could not free stream slot %s: %s", slot, e)

    def renew(self) -> None:
        """Mark this process's slots as alive (one statement)."""
        with self._lock:
            ids = list(self._mine)
        if ids:
            with self.db.session() as s:
                s.execute(update(EventStream).where(EventStream.id.in_(ids)).values(seen_at=utcnow()))

    def _start_renewer(self) -> None:
        with self._lock:
            if self._renewer is not None:
                return

            def loop() -> None:
                stop = threading.Event()
                while not stop.wait(RENEW_S):
                    try:
                        self.renew()
                    except Exception as e:  # noqa: BLE001 - the database may be away; try again next time
                        log.debug("stream slots: %s", e)

            self._renewer = threading.Thread(target=loop, name="stream-slots", daemon=True)
            self._renewer.start()

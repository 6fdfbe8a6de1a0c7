"""The SSE streams of submissions (``stream``) and what they watch (``Board``), read once per change for all.

Every change to the queue wakes every stream (``web.notify.Hub``); without this, each would query the
database at each wake-up, and 200 watchers would make 200 queries per claim. The board reads, once per
hub version (and at least every few seconds), the state and queue position of the watched submissions, in one
statement and so from one snapshot; a stream reads its submission's full row only when its own state changes.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from .db import Database
from .models import CANCELLED, DONE, QUEUED, Submission
from .notify import Hub

POSITION_EVERY_S = 1.0  # a stream sends a queue-position change at most this often (state changes at once)
MAX_AGE_S = 5.0  # a snapshot is re-read after this long even without a change (a lost notification)


class Board:
    def __init__(self, db: Database, hub: Hub):
        self.db, self.hub = db, hub
        self.watched: Counter[int] = Counter()
        self._lock = threading.Lock()
        self._version = -1
        self._at = 0.0
        self._snap: dict[int, tuple[str, int | None]] = {}

    def add(self, sub_id: int) -> None:
        with self._lock:
            self.watched[sub_id] += 1
            self._version = -1  # the next read includes it

    def remove(self, sub_id: int) -> None:
        with self._lock:
            self.watched[sub_id] -= 1
            if self.watched[sub_id] <= 0:
                del self.watched[sub_id]

    def get(self, sub_id: int, not_before: float = 0.0) -> tuple[str, int | None] | None:
        """(state, queue position) of a watched submission, as of the hub's current version, from a read that
        started at or after ``not_before`` (time.monotonic(): a stream's own last read of its row, so that
        what it sends never goes back in time)."""
        with self._lock:
            version = self.hub.version  # read before the query: the snapshot is at least this new
            if version != self._version or self._at < not_before or time.monotonic() - self._at > MAX_AGE_S:
                ids = list(self.watched)
                started = time.monotonic()
                # one statement, so one snapshot: state and position must agree (two statements under
                # PostgreSQL's READ COMMITTED saw a job queued, then claimed before its position was counted).
                # The positions come from one pass over the queue (a window), not a count per watched row: with
                # 300 watchers and 200 queued, that was 300 index ranges per read, at every claim.
                queue = (select(Submission.id, func.row_number().over(order_by=Submission.id).label("pos"))
                         .where(Submission.state == QUEUED).subquery())
                with self.db.session() as s:
                    rows = s.execute(select(Submission.id, Submission.state, queue.c.pos)
                                     .outerjoin(queue, queue.c.id == Submission.id)
                                     .where(Submission.id.in_(ids))).all()
                self._snap = {sid: (state, pos if state == QUEUED else None) for sid, state, pos in rows}
                self._version, self._at = version, started
            return self._snap.get(sub_id)


def _sse(event: str, data: dict[str, Any], n: int) -> str:
    return f"id: {n}\nevent: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def stream(board: Board, sub_id: int, read: Callable[[], tuple[str, dict[str, Any]]],
           heartbeat: float, still_valid: Callable[[], bool] = lambda: True,
           recheck: float = 5.0) -> Iterator[str]:
    """The SSE stream of one submission: an event with its whole row (``read()``) when its state changes, its
    queue position at most every ``POSITION_EVERY_S``, a heartbeat comment when idle; it ends when the
    submission does (or after an hour: the browser reconnects), and, with no event, as soon as
    ``still_valid()`` (asked every ``recheck`` s) says that the credential it was opened with is gone."""
    read_at = 0.0  # when this stream last started reading its own row

    def full() -> tuple[str, dict[str, Any]]:
        nonlocal read_at
        read_at = time.monotonic()
        return read()

    yield "retry: 2000\n\n"
    n, last_sent, last_moved = 0, time.monotonic(), 0.0
    status, data = None, None
    seen = board.hub.version
    until = time.monotonic() + 3600  # a stream lasts an hour at most; the browser reconnects
    checked = time.monotonic()
    board.add(sub_id)
    try:
        while time.monotonic() < until:
            if time.monotonic() - checked >= recheck:
                if not still_valid():
                    return  # the token was revoked, the session ended or the user disabled
                checked = time.monotonic()
            wait_more = None
            try:
                now = board.get(sub_id, read_at) if status is not None else None
                if now is None or now[0] != status:
                    new_status, new_data = full()  # its own state changed (or the first time): the whole row
                elif now[1] != data.get("position"):
                    # only its place in the queue: at most one such event a second (a queue of n draining
                    # under n watchers is n*n events otherwise)
                    wait_more = POSITION_EVERY_S - (time.monotonic() - last_moved)
                    new_status, new_data = status, ({**data, "position": now[1]} if wait_more <= 0 else data)
                else:
                    new_status, new_data = status, data
            except SQLAlchemyError:
                new_status, new_data = None, None  # the database is away: keep the stream, try again
            if new_status is not None and (new_status, new_data.get("position")) != \
                    (status, data.get("position") if data else None):
                if new_status == status:
                    last_moved = time.monotonic()
                status, data = new_status, new_data
                n += 1
                last_sent = time.monotonic()
                yield _sse(status, data, n)
                if status in (DONE, CANCELLED):
                    return
            wait = heartbeat - (time.monotonic() - last_sent)
            if wait <= 0:
                yield ": heartbeat\n\n"
                last_sent = time.monotonic()
                continue
            wait = min(wait, max(0.0, recheck - (time.monotonic() - checked)))
            if wait_more is not None and wait_more > 0:
                time.sleep(min(wait_more, wait))  # then look again (the position may have moved more)
                continue
            seen = board.hub.wait(seen, min(wait, 5.0))
    finally:
        board.remove(sub_id)

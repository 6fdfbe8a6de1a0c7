"""What the SSE streams of one site process watch, read once per change for all of them.

Every change to the queue wakes every stream (``web.notify.Hub``); without this, each would query the
database at each wake-up, and 200 watchers would make 200 queries per claim. The board reads, once per
hub version (and at least every few seconds), the state and queue position of the watched submissions, in one
statement and so from one snapshot; a stream reads its submission's full row only when its own state changes.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from sqlalchemy import select

from .db import Database
from .models import QUEUED, Submission
from .notify import Hub
from .queue import queued_ahead

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
                # PostgreSQL's READ COMMITTED saw a job queued, then claimed before its position was counted)
                with self.db.session() as s:
                    rows = s.execute(select(Submission.id, Submission.state, queued_ahead(Submission.id))
                                     .where(Submission.id.in_(ids))).all()
                self._snap = {sid: (state, n + 1 if state == QUEUED else None) for sid, state, n in rows}
                self._version, self._at = version, started
            return self._snap.get(sub_id)

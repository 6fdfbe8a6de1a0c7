"""The queue: the submissions table, and the only code that changes a submission's state.

Every transition is one transaction that checks the state it starts from (a conditional update), so two
workers, two runners or a runner and the reaper can race and the outcome is still one of the legal ones:

- ``enqueue``: a row in ``queued`` (inserting it is enqueueing it);
- ``claim``: the oldest queued job a runner can judge becomes ``running`` with a fresh lease
  (PostgreSQL: ``FOR UPDATE SKIP LOCKED``; SQLite: ``BEGIN IMMEDIATE``);
- ``heartbeat``: extends the lease, only while the lease is the job's current one;
- ``store_result``: ``running -> done`` with the lease; a repeat with the same lease is ignored;
- ``release``: a runner hands a job back (shutdown) without losing an attempt;
- a lease is bound to the runner that claimed it: heartbeat, result and release name the runner, and
  another runner holding the lease id changes nothing (``LeaseLost("not_your_lease")``);
- ``reap``: an expired lease goes back to ``queued``; after ``max_attempts`` claims it is ``done`` with an
  ``internal_error`` verdict, which never counts against the learner;
- ``cancel`` / ``requeue``: the learner and staff.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session, aliased

from judge.modes import judge_mode
from judge.verdict import Verdict

from .db import Database, utcnow
from .models import CANCELLED, DONE, QUEUED, RUNNING, Runner, Setting, Submission
from .notify import Hub, changed


def queued_ahead(of):
    """SQL: how many queued submissions are ahead of submission ``of`` (an id, or an outer query's
    ``Submission.id``, which it then correlates to); a queued submission's position is that + 1."""
    ahead = aliased(Submission)
    return select(func.count()).select_from(ahead).where(ahead.state == QUEUED, ahead.id < of).scalar_subquery()

@dataclass
class QueueConfig:
    lease_s: float = 60.0
    max_attempts: int = 3
    queue_cap: int = 200  # queued submissions, site-wide
    max_queued_per_user: int = 3  # one learner's queued submissions
    rate_limit: int = 10  # submissions per user per window
    rate_window_s: float = 60.0

    @classmethod
    def from_app_config(cls, c: dict) -> QueueConfig:
        return cls(lease_s=float(c["LEASE_SECONDS"]), max_attempts=int(c["MAX_ATTEMPTS"]),
                   queue_cap=int(c["QUEUE_CAP"]),
                   max_queued_per_user=int(c["MAX_QUEUED_PER_USER"]), rate_limit=int(c["RATE_LIMIT"]),
                   rate_window_s=float(c["RATE_WINDOW_SECONDS"]))


class Refused(Exception):
    """A submission the queue does not take now; ``retry_after`` seconds is when to try again."""

    def __init__(self, code: str, message: str, retry_after: int):
        super().__init__(message)
        self.code, self.message, self.retry_after = code, message, retry_after


NOT_YOURS = "not_your_lease"  # LeaseLost's reason when the lease is current but another runner claimed it


class LeaseLost(Exception):
    """The lease is not (or no longer) the job's current one, or not this runner's: ``reason`` says why
    (``unknown_job``, ``cancelled``, ``lease_expired``, ``finished``, ``not_your_lease``)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Job:
    """What a runner gets from a claim."""

    id: int
    lease_id: str
    lease_s: float
    exercise: str
    mode: str
    run_only: bool
    code: str
    attempt: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "lease_id": self.lease_id, "lease_seconds": self.lease_s, "exercise": self.exercise,
                "mode": self.mode, "run": self.run_only, "code": self.code, "attempt": self.attempt}


@dataclass
class Queue:
    db: Database
    config: QueueConfig = field(default_factory=QueueConfig)
    hub: Hub | None = None
    _last_reap: float = field(default=0.0, repr=False)

    # --- learners -------------------------------------------------------------------------------------------

    def enqueue(self, user_id: int, exercise: str, mode: str, code: str, run_only: bool = False,
                also: Callable[[Session, Submission], object] | None = None) -> Submission:
        """Insert a queued submission; ``also(session, submission)`` runs in the same transaction once it has its
        id (the submissions API records its timings against the assignments there)."""
        now = utcnow()
        window = dt.timedelta(seconds=self.config.rate_window_s)
        with self.db.session(write_lock=True) as s:
            if not self.db.is_sqlite:  # one user's submissions are counted and inserted one at a time
                s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 7_000_000_000 + user_id})
            if self.intake_paused(s):
                raise Refused("intake_paused", "The grading server is not taking submissions right now "
                              "(paused by the course staff). Try again later.", 60)
            recent = s.scalars(select(Submission.created_at).where(
                Submission.user_id == user_id, Submission.created_at > now - window
            ).order_by(Submission.created_at)).all()
            if len(recent) >= self.config.rate_limit:
                wait = (recent[len(recent) - self.config.rate_limit] + window - now).total_seconds()
                raise Refused("rate_limited", f"At most {self.config.rate_limit} submissions per "
                              f"{self.config.rate_window_s:g} s: wait a little.", max(1, math.ceil(wait)))
            mine = s.scalar(select(func.count()).select_from(Submission).where(
                Submission.user_id == user_id, Submission.state == QUEUED))
            if mine >= self.config.max_queued_per_user:
                raise Refused("too_many_queued", f"You have {mine} submissions waiting in the queue, the most one "
                              f"learner may have at once ({self.config.max_queued_per_user}): wait for one to be "
                              "judged, or cancel one, then submit again.", 10)
            queued = s.scalar(select(func.count()).select_from(Submission).where(Submission.state == QUEUED))
            if queued >= self.config.queue_cap:
                raise Refused("queue_full", f"The queue is full ({queued} submissions waiting). Try again later.",
                              30)
            sub = Submission(user_id=user_id, exercise=exercise, mode=mode, code=code, run_only=run_only,
                             state=QUEUED, created_at=now, updated_at=now)
            s.add(sub)
            s.flush()
            if also is not None:
                also(s, sub)
            changed(s, self.db, self.hub)
            return sub

    def cancel(self, sub_id: int) -> str:
        """Cancel a queued or running job; returns the state it is in afterwards."""
        now = utcnow()
        with self.db.session() as s:
            n = s.execute(update(Submission).where(Submission.id == sub_id, Submission.state.in_((QUEUED, RUNNING)))
                          .values(state=CANCELLED, finished_at=now, updated_at=now)).rowcount
            if n:
                changed(s, self.db, self.hub)
            return s.scalar(select(Submission.state).where(Submission.id == sub_id)) or ""

    def position(self, s, sub: Submission) -> int | None:
        """1 for the next job to be claimed; None unless queued."""
        if sub.state != QUEUED:
            return None
        return 1 + s.scalar(select(queued_ahead(sub.id)))

    # --- runners --------------------------------------------------------------------------------------------

    def claim(self, runner_id: int, modes: list[str]) -> Job | None:
        if not modes:
            return None
        now = utcnow()
        lease = uuid.uuid4().hex
        with self.db.session(write_lock=True) as s:
            q = select(Submission.id).where(Submission.state == QUEUED, Submission.mode.in_(modes)) \
                .order_by(Submission.id).limit(1)
            if not self.db.is_sqlite:
                q = q.with_for_update(skip_locked=True)
            sub_id = s.scalar(q)
            if sub_id is None:
                return None
            n = s.execute(update(Submission).where(Submission.id == sub_id, Submission.state == QUEUED).values(
                state=RUNNING, attempts=Submission.attempts + 1, lease_id=lease,
                lease_expires_at=now + dt.timedelta(seconds=self.config.lease_s), runner_id=runner_id,
                claimed_at=now, heartbeat_at=now, updated_at=now)).rowcount
            if n != 1:  # cannot happen under the lock; never hand out a job twice
                return None
            row = s.execute(select(Submission.exercise, Submission.mode, Submission.run_only, Submission.code,
                                   Submission.attempts).where(Submission.id == sub_id)).one()
            changed(s, self.db, self.hub)
            return Job(id=sub_id, lease_id=lease, lease_s=self.config.lease_s, exercise=row.exercise,
                       mode=row.mode, run_only=row.run_only, code=row.code, attempt=row.attempts)

    def _why_lost(self, s, sub_id: int, lease_id: str, runner_id: int) -> str:
        row = s.execute(select(Submission.state, Submission.lease_id, Submission.runner_id)
                        .where(Submission.id == sub_id)).first()
        if row is None:
            return "unknown_job"
        if row.lease_id == lease_id and row.runner_id != runner_id:
            return NOT_YOURS  # another runner's lease: this one may not touch it, whatever its state
        if row.state == CANCELLED:
            return "cancelled"
        if row.lease_id != lease_id:
            return "lease_expired"  # requeued by the reaper (and maybe claimed by another runner)
        if row.state == DONE:
            return "finished"
        return "lease_expired"

    def heartbeat(self, sub_id: int, lease_id: str, runner_id: int) -> float:
        """Extend the lease; returns its new length in seconds. LeaseLost when it is not the current one, or
        not the one runner ``runner_id`` claimed."""
        now = utcnow()
        with self.db.session() as s:
            n = s.execute(update(Submission).where(
                Submission.id == sub_id, Submission.state == RUNNING, Submission.lease_id == lease_id,
                Submission.runner_id == runner_id, Submission.lease_expires_at >= now,
            ).values(lease_expires_at=now + dt.timedelta(seconds=self.config.lease_s), heartbeat_at=now)).rowcount
            if n != 1:
                raise LeaseLost(self._why_lost(s, sub_id, lease_id, runner_id))
            return self.config.lease_s

    def store_result(self, sub_id: int, lease_id: str, runner_id: int, verdict: dict[str, Any],
                     judged_on: dict[str, Any] | None = None) -> bool:
        """Store the verdict once. True: stored now; False: the same lease had stored it already.
        LeaseLost: the lease is stale (requeued, claimed by another runner, or cancelled), or it is not the
        lease of runner ``runner_id`` (``not_your_lease``).

        A result with the current lease is taken even if the lease expired a moment ago, as long as the
        reaper has not handed the job to anyone else (the lease id is still the job's)."""
        now = utcnow()
        with self.db.session() as s:
            n = s.execute(update(Submission).where(
                Submission.id == sub_id, Submission.state == RUNNING, Submission.lease_id == lease_id,
                Submission.runner_id == runner_id,
            ).values(state=DONE, result=str(verdict.get("status", "")), verdict=json.dumps(verdict),
                     judged_on=json.dumps(judged_on) if judged_on is not None else None,
                     finished_at=now, updated_at=now)).rowcount
            if n == 1:
                changed(s, self.db, self.hub)
                return True
            why = self._why_lost(s, sub_id, lease_id, runner_id)
            if why == "finished":
                return False
            raise LeaseLost(why)

    def release(self, sub_id: int, lease_id: str, runner_id: int, *, failed: bool = False) -> str:
        """A runner hands a job back unjudged. Stopping (``failed=False``): queued again, the attempt not
        counted. Its sandbox failed (``failed=True``): the attempt counts, and the last one ends the job as
        internal_error. Returns the job's state afterwards. LeaseLost as for ``heartbeat``."""
        now = utcnow()
        with self.db.session(write_lock=True) as s:
            held = (Submission.id == sub_id, Submission.state == RUNNING, Submission.lease_id == lease_id,
                    Submission.runner_id == runner_id)
            row = s.execute(select(Submission.attempts, Submission.exercise, Submission.mode, Submission.run_only)
                            .where(*held)).first()
            if row is None:
                raise LeaseLost(self._why_lost(s, sub_id, lease_id, runner_id))
            if failed and row.attempts >= self.config.max_attempts:
                v = gave_up_verdict(row.exercise, row.mode, row.run_only, row.attempts)
                s.execute(update(Submission).where(*held).values(
                    state=DONE, result=v["status"], verdict=json.dumps(v), finished_at=now, updated_at=now))
                state = DONE
            else:
                s.execute(update(Submission).where(*held).values(
                    state=QUEUED, attempts=row.attempts if failed else max(row.attempts - 1, 0), lease_id=None,
                    lease_expires_at=None, runner_id=None, updated_at=now))
                state = QUEUED
            changed(s, self.db, self.hub)
            return state

    def reap_if_due(self, every_s: float = 1.0) -> None:
        """The claim's reaper: at most once a second per process, and a lock only when something expired."""
        now = time.monotonic()
        if now - self._last_reap < every_s:
            return
        self._last_reap = now
        with self.db.session() as s:
            expired = s.scalar(select(Submission.id).where(
                Submission.state == RUNNING, Submission.lease_expires_at < utcnow()).limit(1))
        if expired is not None:
            self.reap()

    def reap(self) -> tuple[int, int]:
        """Return expired leases to the queue; end jobs out of attempts as internal_error. (requeued, failed)"""
        now = utcnow()
        requeued = failed = 0
        with self.db.session(write_lock=True) as s:
            q = select(Submission.id, Submission.attempts, Submission.exercise, Submission.mode, Submission.run_only) \
                .where(Submission.state == RUNNING, Submission.lease_expires_at < now).order_by(Submission.id)
            if not self.db.is_sqlite:
                q = q.with_for_update(skip_locked=True)
            for row in s.execute(q).all():
                expired = (Submission.id == row.id, Submission.state == RUNNING, Submission.lease_expires_at < now)
                if row.attempts >= self.config.max_attempts:
                    v = gave_up_verdict(row.exercise, row.mode, row.run_only, row.attempts)
                    failed += s.execute(update(Submission).where(*expired).values(
                        state=DONE, result=v["status"], verdict=json.dumps(v), finished_at=now, updated_at=now,
                    )).rowcount
                else:
                    requeued += s.execute(update(Submission).where(*expired).values(
                        state=QUEUED, lease_id=None, lease_expires_at=None, runner_id=None, updated_at=now,
                    )).rowcount
            if requeued or failed:
                changed(s, self.db, self.hub)
        return requeued, failed

    # --- staff ----------------------------------------------------------------------------------------------

    def requeue(self, sub_id: int) -> bool:
        """Put a job back in the queue whatever its state (a fresh set of attempts, the verdict dropped)."""
        now = utcnow()
        with self.db.session() as s:
            n = s.execute(update(Submission).where(Submission.id == sub_id).values(
                state=QUEUED, attempts=0, lease_id=None, lease_expires_at=None, runner_id=None, result=None,
                verdict=None, judged_on=None, finished_at=None, updated_at=now)).rowcount
            if n:
                changed(s, self.db, self.hub)
            return bool(n)

    def intake_paused(self, s=None) -> bool:
        if s is None:
            with self.db.session() as s2:
                return self.intake_paused(s2)
        return (s.get(Setting, "intake_paused") or Setting(value="")).value == "1"

    def set_intake_paused(self, paused: bool) -> None:
        with self.db.session() as s:
            row = s.get(Setting, "intake_paused")
            if row is None:
                s.add(Setting(key="intake_paused", value="1" if paused else "0"))
            else:
                row.value = "1" if paused else "0"

    def runners_online(self, within_s: float = 90.0) -> list[Runner]:
        since = utcnow() - dt.timedelta(seconds=within_s)
        with self.db.session() as s:
            return list(s.scalars(select(Runner).where(Runner.disabled.is_(False), Runner.last_seen_at >= since)
                                  .order_by(Runner.name)))


def gave_up_verdict(exercise: str, mode: str, run_only: bool, attempts: int) -> dict[str, Any]:
    return Verdict.failure("internal_error", f"The grading server tried to judge this submission {attempts} times and "
                           "no runner finished it (runners stopped or lost contact). This is not your fault: submit "
                           "again, or tell the course staff.", exercise=exercise, mode=judge_mode(mode),
                           run=run_only).to_dict()

"""The grading server's tables. The submissions table is the queue: inserting a row is enqueueing it.

A submission moves ``queued -> running -> done`` (or ``cancelled``); a lost lease moves it back to
``queued``. Secrets (passwords, API tokens, runner tokens, session keys, invite and login links) are stored
hashed only. The schema itself is created by Alembic (``web/migrations``); this module must agree with it (a
test checks).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from .db import utcnow

QUEUED, RUNNING, DONE, CANCELLED = "queued", "running", "done", "cancelled"
STATES = (QUEUED, RUNNING, DONE, CANCELLED)
FINAL_STATES = (DONE, CANCELLED)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(256))  # None: no password login yet
    is_staff: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    group_name: Mapped[str] = mapped_column(String(64), default="", server_default="")  # a course's section
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class LoginSession(Base):
    """One login: the session cookie names it by a random key stored here as its SHA-256. Logging out, a
    password change and ``users disable`` delete rows, and the cookies that named them stop working."""

    __tablename__ = "sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the cookie's session key
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)

    user: Mapped[User] = relationship(lazy="joined")


class LoginFailure(Base):
    """A password that was tried and was wrong (or is being checked now): the login throttle counts these
    per account and per address over a window (``web/throttle.py``)."""

    __tablename__ = "login_failures"
    __table_args__ = (
        Index("ix_login_failures_username_at", "username", "at"),
        Index("ix_login_failures_address_at", "address", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64))  # as typed (lowercased), whether or not such a user exists
    address: Mapped[str] = mapped_column(String(64))  # the client's address (behind TRUSTED_PROXIES proxies)
    at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class ApiToken(Base):
    """A learner's (or staff member's) token for the command line and scripts."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64), default="")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the token
    prefix: Mapped[str] = mapped_column(String(16))  # the first characters, to recognise it in a list
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime)

    user: Mapped[User] = relationship(lazy="joined")


class Invite(Base):
    """A one-time link: an invitation to create an account, or a login link for an existing user."""

    __tablename__ = "invites"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(16), default="invite")  # invite | login
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))  # login links
    is_staff: Mapped[bool] = mapped_column(Boolean, default=False)  # invitations: the account made is staff
    created_by: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)
    used_at: Mapped[dt.datetime | None] = mapped_column(DateTime)


THIS_MACHINE = "this-machine"  # the runner `python -m web` starts beside the site (web/embedded.py)


def runner_label(name: str | None) -> str:
    """A runner as the pages name it: this machine's runner, or ``runner NAME``."""
    if not name:
        return "a runner"
    return "this machine's runner" if name == THIS_MACHINE else f"runner {name}"


class Runner(Base):
    __tablename__ = "runners"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_seen_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    modes: Mapped[str] = mapped_column(String(64), default="")  # what it last said it judges, comma-separated
    gpu: Mapped[str | None] = mapped_column(String(128))  # its GPU's name, None on a CPU-only runner
    version: Mapped[str] = mapped_column(String(64), default="")


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        Index("ix_submissions_state_id", "state", "id"),  # the claim: oldest queued first
        Index("ix_submissions_user_created", "user_id", "created_at"),  # the rate limit and "my submissions"
        Index("ix_submissions_updated", "updated_at"),  # change detection for SSE on SQLite
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    exercise: Mapped[str] = mapped_column(String(128))
    mode: Mapped[str] = mapped_column(String(8))  # gpu | cpu
    run_only: Mapped[bool] = mapped_column(Boolean, default=False)
    code: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default=QUEUED)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_id: Mapped[str | None] = mapped_column(String(32))
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    runner_id: Mapped[int | None] = mapped_column(ForeignKey("runners.id", ondelete="SET NULL"))
    result: Mapped[str | None] = mapped_column(String(32))  # the verdict's status, once done
    verdict: Mapped[str | None] = mapped_column(Text)  # the verdict JSON, once done
    judged_on: Mapped[str | None] = mapped_column(Text)  # JSON: runner, gpu, device, emulated
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    claimed_at: Mapped[dt.datetime | None] = mapped_column(DateTime)  # the last claim
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime)  # done or cancelled
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)

    user: Mapped[User] = relationship(lazy="joined")
    runner: Mapped[Runner | None] = relationship(lazy="joined")

    def verdict_dict(self) -> dict[str, Any] | None:
        return json.loads(self.verdict) if self.verdict else None

    def judged_on_dict(self) -> dict[str, Any] | None:
        return json.loads(self.judged_on) if self.judged_on else None


class Setting(Base):
    """Site-wide switches that every worker must see (intake paused)."""

    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text, default="")


class EventStream(Base):
    """An open ``/events`` stream: its slot, counted against the per-user and site-wide caps by every worker.

    The process serving it renews ``seen_at`` every few seconds and deletes the row when the stream ends; the
    row of a process that died stops being renewed, stops counting after ``web.slots.STALE_S`` and is deleted
    by the next stream opened."""

    __tablename__ = "event_streams"
    __table_args__ = (Index("ix_event_streams_user_seen", "user_id", "seen_at"),
                      Index("ix_event_streams_seen", "seen_at"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(Integer)
    opened_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    seen_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


# ---- running a course: assignments, extensions, what each submission was for, saved code, similarity ----

ON_TIME, LATE, AFTER = "on_time", "late", "after"  # a submission against an assignment's dates
TIMINGS = (ON_TIME, LATE, AFTER)


class Assignment(Base):
    """A named set of exercises with an opening time, a due time and an optional late window (``late_until``,
    after ``due_at``). Times are naive UTC, like every time in this schema."""

    __tablename__ = "assignments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    opens_at: Mapped[dt.datetime] = mapped_column(DateTime)
    due_at: Mapped[dt.datetime] = mapped_column(DateTime)
    late_until: Mapped[dt.datetime | None] = mapped_column(DateTime)  # None: no late window
    created_by: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)

    items: Mapped[list[AssignmentItem]] = relationship(order_by="AssignmentItem.position", cascade="all, delete-orphan",
                                                       lazy="selectin")

    @property
    def exercises(self) -> list[str]:
        return [i.exercise for i in self.items]


class AssignmentItem(Base):
    """One exercise of an assignment, in the order staff listed them."""

    __tablename__ = "assignment_items"

    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), primary_key=True)
    exercise: Mapped[str] = mapped_column(String(128), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, default=0)


class Extension(Base):
    """A learner's own due time for one assignment; the late window, if the assignment has one, moves with it."""

    __tablename__ = "extensions"

    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    due_at: Mapped[dt.datetime] = mapped_column(DateTime)
    granted_by: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class SubmissionTiming(Base):
    """What a (graded, not run-only) submission was against each assignment that held its exercise when it
    came: ``on_time``, ``late`` (in the late window) or ``after``; recorded once, when it is made."""

    __tablename__ = "submission_timings"
    __table_args__ = (Index("ix_submission_timings_assignment", "assignment_id"),)

    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), primary_key=True)
    timing: Mapped[str] = mapped_column(String(16))  # one of TIMINGS


class Workspace(Base):
    """A learner's code for one exercise, saved to the server to open on another machine."""

    __tablename__ = "workspaces"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    exercise: Mapped[str] = mapped_column(String(128), primary_key=True)
    code: Mapped[str] = mapped_column(Text)
    saved_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class SimilarityPair(Base):
    """Two accepted submissions of one exercise by different learners that are much alike, or one that is much
    like the reference (``other_id`` None). ``score`` in [0, 1]; computed in the background (web/similarity.py)."""

    __tablename__ = "similarity_pairs"
    __table_args__ = (Index("ix_similarity_pairs_exercise_score", "exercise", "score"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    exercise: Mapped[str] = mapped_column(String(128))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    other_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    score: Mapped[float] = mapped_column(Float)
    computed_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class SimilarityMark(Base):
    """An accepted submission the similarity worker has compared with the others (once per submission)."""

    __tablename__ = "similarity_marks"

    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    computed_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)

"""An assignment's dates as one learner sees them, and what a submission was against them.

A learner's due time is their extension's, if staff granted one, else the assignment's; the late window, if
the assignment has one, keeps its length and moves with an extension. A submission made at ``t`` is
``on_time`` when ``t <= due``, ``late`` when ``due < t <= late_until``, ``after`` otherwise. It is recorded once,
when the submission is made (``record_timings``), against every assignment that holds its exercise then.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from .models import AFTER, LATE, ON_TIME, Assignment, AssignmentItem, Extension, Submission, SubmissionTiming


@dataclass(frozen=True)
class Window:
    opens_at: dt.datetime
    due_at: dt.datetime
    late_until: dt.datetime | None  # None: no late window

    def timing(self, at: dt.datetime) -> str:
        if at <= self.due_at:
            return ON_TIME
        if self.late_until is not None and at <= self.late_until:
            return LATE
        return AFTER


def window(assignment: Assignment, extension: Extension | None = None) -> Window:
    if extension is None:
        return Window(assignment.opens_at, assignment.due_at, assignment.late_until)
    late = None if assignment.late_until is None else extension.due_at + (assignment.late_until - assignment.due_at)
    return Window(assignment.opens_at, extension.due_at, late)


def windows_for(s: Session, user_id: int, exercise: str) -> list[tuple[Assignment, Window]]:
    """The assignments that hold ``exercise``, each with this learner's window."""
    assignments = list(s.scalars(select(Assignment).join(AssignmentItem)
                                 .where(AssignmentItem.exercise == exercise).order_by(Assignment.due_at)))
    if not assignments:
        return []
    ext = {e.assignment_id: e for e in s.scalars(select(Extension).where(
        Extension.user_id == user_id, Extension.assignment_id.in_([a.id for a in assignments])))}
    return [(a, window(a, ext.get(a.id))) for a in assignments]


def record_timings(s: Session, sub: Submission) -> list[SubmissionTiming]:
    """Record what a graded submission was against each assignment holding its exercise (run-only: nothing)."""
    if sub.run_only:
        return []
    rows = [SubmissionTiming(submission_id=sub.id, assignment_id=a.id, timing=w.timing(sub.created_at))
            for a, w in windows_for(s, sub.user_id, sub.exercise)]
    s.add_all(rows)
    return rows

"""Assignments as staff change them and as a learner sees them: the checks, the changes, the JSON.

Used by the API and the staff pages (``web/assignments.py``) and the admin commands (``web/assignments_cli.py``).
Bad input is an ``AssignmentError`` naming the field; times come in as ISO 8601 (``Z``, an offset, or none:
UTC) and are stored as naive UTC. A learner sees an assignment once it is open (``opens_at <= now``), with their
own window (``web.deadlines.window``: an extension moves the due time and the late window with it) and, per
exercise, ``accepted`` (with the best timing of their accepted submissions: on_time, late, after), ``tried`` or
``not_tried``. An accepted submission's timing is the one recorded when it was made; one made before the
exercise was in the assignment has none recorded and is timed against the window as it is now.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from .db import utcnow
from .deadlines import window
from .models import DONE, TIMINGS, Assignment, AssignmentItem, Extension, Submission, SubmissionTiming, User

NAME_MAX = 128
TIME_FIELDS = ("opens_at", "due_at", "late_until")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class AssignmentError(ValueError):
    """Bad input to an assignment operation: ``field`` is what is wrong, ``code`` a stable name, ``status`` the
    HTTP status the API answers with."""

    def __init__(self, message: str, field: str = "", code: str = "bad_assignment", status: int = 400):
        super().__init__(message)
        self.field, self.code, self.status = field, code, status


def iso(t: dt.datetime | None) -> str | None:
    return t.replace(microsecond=(t.microsecond // 1000) * 1000).isoformat() + "Z" if t else None


def parse_time(value: Any, field: str) -> dt.datetime:
    """An ISO 8601 time (``2026-12-03T14:00:00Z``, an offset, or none: UTC) as naive UTC."""
    if isinstance(value, dt.datetime):
        t = value
    elif isinstance(value, str) and 10 <= len(value.strip()) <= 40:
        try:
            t = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            t = None
        if t is None or "T" not in value.upper() and " " not in value.strip():
            raise AssignmentError(f"{field}: {value[:40]!r} is not a time like 2026-12-03T14:00:00Z.", field,
                                  "bad_time")
    else:
        raise AssignmentError(f"{field} must be a time like 2026-12-03T14:00:00Z (ISO 8601, UTC).", field, "bad_time")
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    if not 1970 <= t.year <= 9998:
        raise AssignmentError(f"{field}: the year {t.year} is out of range.", field, "bad_time")
    return t


def check_name(value: Any) -> str:
    name = value.strip() if isinstance(value, str) else None
    if not name or len(name) > NAME_MAX or _CONTROL.search(name):
        raise AssignmentError(f"name must be 1 to {NAME_MAX} characters, without control characters.", "name",
                              "bad_name")
    return name


def split_exercises(text: str) -> list[str]:
    """Exercise ids as typed: separated by commas, spaces or new lines."""
    return [p for p in re.split(r"[\s,]+", text) if p]


def check_exercises(value: Any, known: Iterable[str]) -> list[str]:
    if isinstance(value, str):
        value = split_exercises(value)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise AssignmentError("exercises must be a non-empty list of exercise ids.", "exercises", "bad_exercises")
    known = set(known)
    unknown = [v for v in value if v not in known]
    if unknown:
        raise AssignmentError("Unknown exercise(s): " + ", ".join(repr(v[:64]) for v in unknown[:10]) + ".",
                              "exercises", "unknown_exercise")
    seen: list[str] = []
    for v in value:
        if v in seen:
            raise AssignmentError(f"The exercise {v!r} is listed twice.", "exercises", "bad_exercises")
        seen.append(v)
    return seen


def check_dates(opens_at: dt.datetime, due_at: dt.datetime, late_until: dt.datetime | None) -> None:
    if due_at <= opens_at:
        raise AssignmentError("due_at must be after opens_at.", "due_at", "bad_dates")
    if late_until is not None and late_until <= due_at:
        raise AssignmentError("late_until must be after due_at.", "late_until", "bad_dates")


def find(s: Session, ident: int | str) -> Assignment | None:
    """An assignment by id, or (a string that is not a number) by name."""
    if isinstance(ident, int) or (isinstance(ident, str) and ident.isdigit() and len(ident) < 10):
        found = s.get(Assignment, int(ident))
        if found is not None or isinstance(ident, int):
            return found
    return s.scalar(select(Assignment).where(Assignment.name == str(ident).strip()))


def _name_free(s: Session, name: str, own_id: int | None = None) -> None:
    other = s.scalar(select(Assignment.id).where(Assignment.name == name))
    if other is not None and other != own_id:
        raise AssignmentError(f"An assignment named {name!r} exists.", "name", "name_taken", 409)


def apply(s: Session, a: Assignment | None, data: dict[str, Any], known: Iterable[str], by: str = "") -> Assignment:
    """Create (``a`` None: every field but late_until required) or change an assignment from ``data`` (name,
    exercises, opens_at, due_at, late_until: None removes the late window), all checked before anything is
    written."""
    creating = a is None
    for field in ("name", "exercises", "opens_at", "due_at"):
        if creating and data.get(field) is None:
            raise AssignmentError(f"{field} is required.", field, "missing_field")
    name = check_name(data["name"]) if "name" in data else a.name
    exercises = check_exercises(data["exercises"], known) if "exercises" in data else None
    times = {f: getattr(a, f, None) for f in TIME_FIELDS}
    for f in TIME_FIELDS:
        if f in data:
            if data[f] is None and f != "late_until":
                raise AssignmentError(f"{f} is required.", f, "missing_field")
            times[f] = None if data[f] is None else parse_time(data[f], f)
    check_dates(times["opens_at"], times["due_at"], times["late_until"])
    _name_free(s, name, None if creating else a.id)
    now = utcnow()
    if creating:
        a = Assignment(created_by=by[:64], created_at=now)
        s.add(a)
    a.name, a.updated_at = name, now
    for f, t in times.items():
        setattr(a, f, t)
    if exercises is not None and exercises != a.exercises:
        a.items.clear()
        s.flush()  # the old rows go before the new ones (the same exercise may come back at another position)
        a.items.extend(AssignmentItem(exercise=e, position=i) for i, e in enumerate(exercises))
    s.flush()
    return a


def user_named(s: Session, username: str) -> User:
    name = username.strip().lower() if isinstance(username, str) else ""
    user = s.scalar(select(User).where(User.username == name)) if 0 < len(name) <= 64 and "\x00" not in name \
        else None
    if user is None:
        raise AssignmentError(f"No user {username[:64]!r}.", "username", "unknown_user", 404)
    return user


def extend(s: Session, a: Assignment, username: str, due: Any, by: str = "") -> Extension:
    """Grant (or change) ``username``'s own due time; it must be after the assignment opens."""
    user = user_named(s, username)
    due_at = parse_time(due, "due_at")
    if due_at <= a.opens_at:
        raise AssignmentError("due_at must be after the assignment opens.", "due_at", "bad_dates")
    ext = s.get(Extension, (a.id, user.id))
    if ext is None:
        ext = Extension(assignment_id=a.id, user_id=user.id, created_at=utcnow())
        s.add(ext)
    ext.due_at, ext.granted_by = due_at, by[:64]
    s.flush()
    return ext


def unextend(s: Session, a: Assignment, username: str) -> bool:
    """Remove ``username``'s extension; False if they had none (an unknown user is an error)."""
    ext = s.get(Extension, (a.id, user_named(s, username).id))
    if ext is None:
        return False
    s.delete(ext)
    return True


def extensions(s: Session, a: Assignment) -> list[tuple[str, Extension]]:
    return [(name, e) for e, name in s.execute(select(Extension, User.username).join(User, User.id == Extension.user_id)
                                               .where(Extension.assignment_id == a.id).order_by(User.username))]


def staff_json(s: Session, a: Assignment) -> dict[str, Any]:
    return {
        "id": a.id, "name": a.name, "exercises": a.exercises, "opens_at": iso(a.opens_at), "due_at": iso(a.due_at),
        "late_until": iso(a.late_until), "created_by": a.created_by, "updated_at": iso(a.updated_at),
        "extensions": [{"username": name, "due_at": iso(e.due_at), "late_until": iso(window(a, e).late_until),
                        "granted_by": e.granted_by} for name, e in extensions(s, a)],
    }


def _best(timings: Iterable[str]) -> str | None:
    found = [t for t in timings if t in TIMINGS]
    return min(found, key=TIMINGS.index) if found else None


def progress(s: Session, user_id: int, assignments: list[Assignment]) -> dict[int, dict[str, dict[str, Any]]]:
    """Per assignment, per exercise: ``{"status": accepted|tried|not_tried, "timing": on_time|late|after|None}``."""
    slugs = {e for a in assignments for e in a.exercises}
    if not slugs:
        return {a.id: {} for a in assignments}
    subs = list(s.execute(select(Submission.id, Submission.exercise, Submission.created_at, Submission.state,
                                 Submission.result, Submission.run_only)
                          .where(Submission.user_id == user_id, Submission.exercise.in_(slugs))))
    accepted = [r for r in subs if r.state == DONE and r.result == "accepted" and not r.run_only]
    recorded: dict[tuple[int, int], str] = {}
    if accepted:
        for sid, aid, timing in s.execute(select(SubmissionTiming.submission_id, SubmissionTiming.assignment_id,
                                                 SubmissionTiming.timing)
                                          .where(SubmissionTiming.submission_id.in_([r.id for r in accepted]))):
            recorded[(sid, aid)] = timing
    ext = {e.assignment_id: e for e in s.scalars(select(Extension).where(
        Extension.user_id == user_id, Extension.assignment_id.in_([a.id for a in assignments])))}
    tried = {r.exercise for r in subs}
    out: dict[int, dict[str, dict[str, Any]]] = {}
    for a in assignments:
        w = window(a, ext.get(a.id))
        rows: dict[str, dict[str, Any]] = {}
        for slug in a.exercises:
            timing = _best(recorded.get((r.id, a.id)) or w.timing(r.created_at) for r in accepted if r.exercise == slug)
            status = "accepted" if timing else ("tried" if slug in tried else "not_tried")
            rows[slug] = {"status": status, "timing": timing}
        out[a.id] = rows
    return out


def learner_json(a: Assignment, ext: Extension | None, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    w = window(a, ext)
    return {
        "id": a.id, "name": a.name, "opens_at": iso(a.opens_at), "due_at": iso(a.due_at),
        "late_until": iso(a.late_until),
        "window": {"opens_at": iso(w.opens_at), "due_at": iso(w.due_at), "late_until": iso(w.late_until),
                   "extended": ext is not None},
        "exercises": [{"exercise": slug, **rows[slug]} for slug in a.exercises],
        "accepted": sum(1 for r in rows.values() if r["status"] == "accepted"),
    }


def open_for(s: Session, user_id: int, now: dt.datetime | None = None, exercise: str | None = None,
             ids: list[int] | None = None) -> list[dict[str, Any]]:
    """The open assignments (``opens_at <= now``) as ``user_id`` sees them, by their due time (theirs)."""
    q = select(Assignment).where(Assignment.opens_at <= (now or utcnow()))
    if exercise is not None:
        q = q.where(Assignment.id.in_(select(AssignmentItem.assignment_id).where(AssignmentItem.exercise == exercise)))
    if ids is not None:
        q = q.where(Assignment.id.in_(ids))
    assignments = list(s.scalars(q.order_by(Assignment.due_at, Assignment.id)))
    if not assignments:
        return []
    ext = {e.assignment_id: e for e in s.scalars(select(Extension).where(
        Extension.user_id == user_id, Extension.assignment_id.in_([a.id for a in assignments])))}
    rows = progress(s, user_id, assignments)
    seen = [learner_json(a, ext.get(a.id), rows[a.id]) for a in assignments]
    return sorted(seen, key=lambda d: (d["window"]["due_at"], d["id"]))


def timings_of(s: Session, sub_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The recorded timings of these submissions: ``{id: [{"assignment", "name", "timing"}]}``."""
    out: dict[int, list[dict[str, Any]]] = {i: [] for i in sub_ids}
    if sub_ids:
        for sid, aid, name, timing in s.execute(
                select(SubmissionTiming.submission_id, Assignment.id, Assignment.name, SubmissionTiming.timing)
                .join(Assignment, Assignment.id == SubmissionTiming.assignment_id)
                .where(SubmissionTiming.submission_id.in_(sub_ids)).order_by(Assignment.due_at, Assignment.id)):
            out[sid].append({"assignment": aid, "name": name, "timing": timing})
    return out

"""The gradebook: every learner's standing on every exercise, computed from the database in a few queries.

``gradebook(session, catalog, Filter(...))`` is the one computation the staff page, its CSV and the API share.

- Rows: the learners (users who are not staff; disabled ones too), by username; ``group`` keeps one group's.
- Columns: the filtered assignment's exercises in its order (with a chapter too: those of that chapter), else
  the chapter's exercises in course order, else every exercise of the catalog in course order.
- A cell counts the *graded* submissions of that learner and exercise: judged (``done``) and not run-only.
  ``result``: ``accepted`` if any of them was, else the newest one's result (None: none graded);
  ``accepted_at``: when the first accepted one (the first made) was submitted; ``attempts``: how many were graded;
  ``timing``: the best that an accepted one was (``on_time`` over ``late`` over ``after``, each recorded when it
  was made) against the filtered assignment, or, without an assignment filter, the worst of those against any assignment
  (``after`` over ``late`` over ``on_time``); None when it was recorded against none.
- Per learner and assignment (the filtered one, else every assignment by due time): ``solved`` of ``total`` of
  its exercises accepted, ``late`` of them with no accepted submission on time against it.

The submissions are read by aggregate queries grouped by (user, exercise), never one query per cell.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from .catalog import Catalog
from .models import AFTER, DONE, LATE, ON_TIME, TIMINGS, Assignment, Submission, SubmissionTiming, User

ACCEPTED = "accepted"
WORST = {None: 0, ON_TIME: 1, LATE: 2, AFTER: 3}  # which timing wins when several assignments hold an exercise


@dataclass(frozen=True)
class Filter:
    assignment: int | None = None  # an assignment's id
    chapter: str = ""  # a chapter's id in the catalog
    group: str = ""  # the learners' group_name ("": everyone)


@dataclass(frozen=True)
class Column:
    slug: str
    title: str
    chapter: str


@dataclass(frozen=True)
class Cell:
    result: str | None = None
    accepted_at: dt.datetime | None = None
    attempts: int = 0
    timing: str | None = None
    # the best an accepted submission was against each assignment (id -> timing): for the summaries
    timings: dict[int, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def mark(self) -> str:
        """What the page shows at a glance: ``accepted``, ``tried`` (graded, never accepted) or ``""``."""
        return "accepted" if self.result == ACCEPTED else "tried" if self.attempts else ""

    @property
    def late(self) -> bool:
        return self.timing in (LATE, AFTER)


EMPTY = Cell()


@dataclass(frozen=True)
class Standing:
    """One learner against one assignment."""

    assignment_id: int
    solved: int
    total: int
    late: int


@dataclass
class Row:
    user_id: int
    username: str
    group: str
    cells: dict[str, Cell] = field(default_factory=dict)
    standings: list[Standing] = field(default_factory=list)


@dataclass
class Gradebook:
    filter: Filter
    columns: list[Column]
    assignments: list[Assignment]  # the summaries' assignments, in order
    rows: list[Row]


class UnknownFilter(ValueError):
    """A filter names an assignment or a chapter that does not exist; ``param`` says which."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


def _columns(catalog: Catalog, f: Filter, assignment: Assignment | None) -> list[Column]:
    by_slug = catalog.by_slug
    if f.chapter and f.chapter not in {c.id for c in catalog.chapters}:
        raise UnknownFilter("chapter", f"no chapter {f.chapter!r}")
    if assignment is not None:
        slugs = assignment.exercises
    else:
        slugs = [en.slug for en in catalog.entries]
    out = []
    for slug in slugs:
        en = by_slug.get(slug)
        chapter = en.exercise.chapter if en else ""
        if f.chapter and chapter != f.chapter:
            continue
        out.append(Column(slug, en.exercise.title if en else slug, chapter))
    return out


def gradebook(s: Session, catalog: Catalog, f: Filter) -> Gradebook:
    assignment = None
    if f.assignment is not None:
        assignment = s.get(Assignment, f.assignment)
        if assignment is None:
            raise UnknownFilter("assignment", f"no assignment {f.assignment}")
    columns = _columns(catalog, f, assignment)
    assignments = [assignment] if assignment else list(s.scalars(select(Assignment).order_by(Assignment.due_at,
                                                                                             Assignment.id)))
    learners = select(User.id, User.username, User.group_name).where(User.is_staff.is_(False))
    if f.group:
        learners = learners.where(User.group_name == f.group)
    rows = [Row(uid, name, group) for uid, name, group in s.execute(learners.order_by(User.username))]
    slugs = list(dict.fromkeys([c.slug for c in columns] + [e for a in assignments for e in a.exercises]))
    cells = _cells(s, f, slugs, learners.subquery()) if rows and slugs else {}
    for row in rows:
        row.cells = {c.slug: cells.get((row.user_id, c.slug), EMPTY) for c in columns}
        row.standings = [_standing(a, row.user_id, cells) for a in assignments]
    return Gradebook(f, columns, assignments, rows)


def _standing(a: Assignment, user_id: int, cells: dict) -> Standing:
    solved = late = 0
    for slug in a.exercises:
        cell = cells.get((user_id, slug))
        if cell is not None and cell.result == ACCEPTED:
            solved += 1
            late += cell.timings.get(a.id) in (LATE, AFTER)
    return Standing(a.id, solved, len(a.exercises), late)


@dataclass
class _Acc:
    """A cell as it is gathered: its aggregates, the newest one's result, the accepted ones' best timings."""

    attempts: int
    accepted_at: dt.datetime | None
    result: str | None
    timings: dict[int, str] = field(default_factory=dict)


def _cells(s: Session, f: Filter, slugs: list[str], learners) -> dict[tuple[int, str], Cell]:
    """Two statements: the graded submissions grouped by (user, exercise), joined to the newest one (its result)
    and the first accepted one (the first made: the lowest id; its time); the accepted ones' best timing per
    assignment."""
    graded = and_(Submission.state == DONE, Submission.run_only.is_(False), Submission.exercise.in_(slugs),
                  Submission.user_id.in_(select(learners.c.id)))
    agg = (select(Submission.user_id, Submission.exercise, func.count().label("attempts"),
                  func.min(case((Submission.result == ACCEPTED, Submission.id))).label("first_id"),
                  func.max(Submission.id).label("latest_id"))
           .where(graded).group_by(Submission.user_id, Submission.exercise).subquery())
    latest, first = Submission.__table__.alias("latest"), Submission.__table__.alias("first")
    q = (select(agg.c.user_id, agg.c.exercise, agg.c.attempts, latest.c.result, first.c.created_at)
         .join(latest, latest.c.id == agg.c.latest_id)
         .outerjoin(first, first.c.id == agg.c.first_id))
    acc = {(uid, slug): _Acc(attempts, accepted_at, result)
           for uid, slug, attempts, result, accepted_at in s.execute(q)}
    # the best timing of the accepted ones against each assignment (an extension granted after a late one, then an
    # accepted resubmission on time: on time), as the assignments API says it
    rank = case(*((SubmissionTiming.timing == t, i) for i, t in enumerate(TIMINGS)), else_=len(TIMINGS))
    best = (select(Submission.user_id, Submission.exercise, SubmissionTiming.assignment_id, func.min(rank))
            .join(SubmissionTiming, SubmissionTiming.submission_id == Submission.id)
            .where(graded, Submission.result == ACCEPTED)
            .group_by(Submission.user_id, Submission.exercise, SubmissionTiming.assignment_id))
    for uid, slug, assignment_id, r in s.execute(best):
        if r < len(TIMINGS):
            acc[(uid, slug)].timings[assignment_id] = TIMINGS[r]
    return {key: _cell(a, f) for key, a in acc.items()}


def _cell(a: _Acc, f: Filter) -> Cell:
    result = ACCEPTED if a.accepted_at is not None else a.result
    if f.assignment is not None:
        timing = a.timings.get(f.assignment)
    else:
        timing = max(a.timings.values(), key=WORST.__getitem__, default=None)
    return Cell(result, a.accepted_at, a.attempts, timing, a.timings)

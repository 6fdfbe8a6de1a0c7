"""Similarity reports: which accepted submissions of an exercise are much alike, or much like the reference.

Each new accepted submission (done, accepted, not a run of the examples) is compared, once, with the latest
accepted submission of every other learner of that exercise and with the exercise's reference solution
(``judge.solution.reference_source``, what ``GET /api/v1/exercises/<id>/solution`` serves). Pairs scoring at
least ``THRESHOLD`` are stored (``SimilarityPair``; ``other_id`` None: the reference); every processed
submission gets a ``SimilarityMark``, inserted first to claim it (its primary key makes the claim once across
every gunicorn worker: an IntegrityError means another one has it).

The comparison, copydetect's fingerprints, is web/code_match.py's.

Computed in the background, never on a page request: a thread of the grading server
(``Grading.start_similarity``, every ``SIMILARITY_SECONDS``) and ``flask --app web similarity run`` both call
``process_pending``. A submission is compared with another learner's latest accepted one only once that one
is marked itself; one not yet marked compares with this one when its own turn comes, so each pair is computed
once, by whichever of the two comes second.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sqlalchemy import and_, delete, func, select
from sqlalchemy.exc import IntegrityError

from .catalog import Catalog
from .code_match import fingerprint, score
from .db import Database, utcnow
from .models import DONE, SimilarityMark, SimilarityPair, Submission

log = logging.getLogger(__name__)

ACCEPTED = "accepted"
# Measured on the bank (web/code_match.py's scores): the alternatives and the reference solutions of all 31
# exercises, 62 codes written independently, 1891 pairs: the highest scores 0.69 (graph-capture-loop's alternative
# against its own reference: two short solutions of one tight problem), the next 0.53 (two references sharing
# their stub's preamble); 5 pairs reach 0.5, 1 reaches 0.6, none 0.7. Each alternative and each reference with its
# identifiers renamed, its runs of one-line assignments and its functions reordered scores 0.75 to 1.0 against
# the original (the references 0.87 to 1.0); the 245 mutants (the reference with one rule broken, some rewritten
# more widely) 0.26 to 1.0 against their reference, median 0.83, 230 of them at 0.6 or more (192 at 0.7). 0.6
# lists every disguised copy and nearly every near copy, for one pair of independent work in two thousand.
THRESHOLD = 0.6


def accepted_clause():
    return and_(Submission.state == DONE, Submission.result == ACCEPTED, Submission.run_only.is_(False))


# --- the reference ------------------------------------------------------------------------------------------


def reference_for(catalog_or_root: Catalog | str | Path | None, slug: str) -> str | None:
    """The exercise's reference solution, as the site serves it; None when there is no such exercise now."""
    from judge.exercise import find_exercise
    from judge.solution import reference_source

    try:
        if isinstance(catalog_or_root, Catalog):
            entry = catalog_or_root.by_slug.get(slug)
            if entry is None:
                return None
            exercise = entry.exercise
        else:
            exercise = find_exercise(slug, catalog_or_root)
        return reference_source(exercise)
    except Exception as e:  # noqa: BLE001 - no such exercise, or the engine not importable here: learners only
        log.warning("similarity: no reference for %s: %s", slug, e)
        return None


# --- the work -----------------------------------------------------------------------------------------------


def _unmarked():
    return ~select(SimilarityMark.submission_id).where(SimilarityMark.submission_id == Submission.id).exists()


def pending_ids(db: Database, limit: int) -> list[int]:
    """Accepted submissions not marked yet, oldest first."""
    with db.session() as s:
        q = select(Submission.id).where(accepted_clause(), _unmarked()).order_by(Submission.id).limit(limit)
        return list(s.scalars(q))


def claim(db: Database, submission_id: int) -> bool:
    """Insert the submission's mark; False when another worker (or an earlier run) has it."""
    try:
        with db.session() as s:
            s.add(SimilarityMark(submission_id=submission_id))
    except IntegrityError:
        return False
    return True


def _others(s, sub: Submission) -> list[Submission]:
    """The latest accepted submission of every other learner of the exercise, where that one is marked."""
    latest = (select(func.max(Submission.id)).where(accepted_clause(), Submission.exercise == sub.exercise,
                                                    Submission.user_id != sub.user_id)
              .group_by(Submission.user_id))
    q = (select(Submission).join(SimilarityMark, SimilarityMark.submission_id == Submission.id)
         .where(Submission.id.in_(latest)).order_by(Submission.id))
    return list(s.scalars(q))


def compute(db: Database, submission_id: int, references: dict[str, str | None],
            catalog_or_root: Catalog | str | Path | None, prints: dict[int, Any] | None = None,
            threshold: float = THRESHOLD) -> int:
    """Compare one (claimed) submission; store its pairs at or above ``threshold``. Returns how many it stored.
    ``prints``: fingerprints already made in this round, by submission id (a submission's code never changes).

    It reads, compares outside any transaction, then writes in one short transaction (on SQLite it takes the
    write lock first: a read transaction turned writer fails at once when another process wrote meanwhile)."""
    prints = {} if prints is None else prints
    with db.session() as s:
        sub = s.get(Submission, submission_id)
        if sub is None:
            return 0
        exercise, code = sub.exercise, sub.code
        others = [(o.id, o.code) for o in _others(s, sub)]
    if exercise not in references:
        references[exercise] = reference_for(catalog_or_root, exercise)
    reference = references[exercise]
    mine = prints[submission_id] = prints.get(submission_id) or fingerprint(code)
    found: list[tuple[int | None, float]] = []
    if reference is not None:
        found.append((None, score(mine, fingerprint(reference))))
    for other_id, other_code in others:
        theirs = prints[other_id] = prints.get(other_id) or fingerprint(other_code)
        found.append((other_id, score(mine, theirs)))
    stored = 0
    with db.session(write_lock=True) as s:
        for other_id, value in found:
            if value < threshold:
                continue
            if other_id is not None and s.scalar(select(SimilarityPair.id).where(
                    SimilarityPair.submission_id == other_id, SimilarityPair.other_id == submission_id)):
                continue  # the other one compared itself with this one meanwhile: stored already
            s.add(SimilarityPair(exercise=exercise, submission_id=submission_id, other_id=other_id,
                                 score=round(value, 4)))
            stored += 1
        mark = s.get(SimilarityMark, submission_id)
        if mark is not None:
            mark.computed_at = utcnow()
    if stored:
        _drop_reversed(db, submission_id)
    return stored


def _drop_reversed(db: Database, submission_id: int) -> None:
    """Two workers that compared two submissions at the same moment (each claimed before the other compared, on
    PostgreSQL) both stored the pair: keep the first row. Whichever of them commits second sees both rows."""
    with db.session() as s:
        mine = list(s.scalars(select(SimilarityPair).where(SimilarityPair.submission_id == submission_id,
                                                           SimilarityPair.other_id.is_not(None))))
        for p in mine:
            twin = s.scalar(select(SimilarityPair).where(SimilarityPair.submission_id == p.other_id,
                                                         SimilarityPair.other_id == submission_id))
            if twin is not None:
                s.execute(delete(SimilarityPair).where(SimilarityPair.id == max(p.id, twin.id)))


def process_pending(db: Database, catalog_or_root: Catalog | str | Path | None = None, limit: int = 50,
                    threshold: float = THRESHOLD) -> int:
    """Compare up to ``limit`` new accepted submissions (each claimed first). Returns how many this call
    processed. ``catalog_or_root``: the site's Catalog, or an exercises folder (None: judge's default);
    ``threshold``: the lowest score stored (0 stores every pair compared: what the tests rank)."""
    references: dict[str, str | None] = {}
    prints: dict[int, Any] = {}
    done = 0
    for sid in pending_ids(db, limit):
        if not claim(db, sid):
            continue
        try:
            compute(db, sid, references, catalog_or_root, prints, threshold)
        except Exception:  # noqa: BLE001 - the database went away, say: unclaim it for a later round
            log.exception("similarity: submission %s", sid)
            try:
                with db.session() as s:
                    s.execute(delete(SimilarityMark).where(SimilarityMark.submission_id == sid))
            except Exception:  # noqa: BLE001
                log.warning("similarity: submission %s stays marked without its pairs", sid)
            continue
        done += 1
    return done


def exercise_pairs(db: Database, exercise: str | None = None, per_exercise: int = 200) -> list[dict]:
    """The stored pairs, by exercise then score (highest first; at most ``per_exercise`` of each exercise), with
    both sides' submissions (their learner and time)."""
    rank = func.row_number().over(partition_by=SimilarityPair.exercise,
                                  order_by=(SimilarityPair.score.desc(), SimilarityPair.id)).label("rank")
    ranked = select(SimilarityPair.id, rank)
    if exercise:
        ranked = ranked.where(SimilarityPair.exercise == exercise)
    ranked = ranked.subquery()
    with db.session() as s:
        q = (select(SimilarityPair).join(ranked, ranked.c.id == SimilarityPair.id).where(ranked.c.rank <= per_exercise)
             .order_by(SimilarityPair.exercise, SimilarityPair.score.desc(), SimilarityPair.id))
        pairs = list(s.scalars(q))
        ids = {p.submission_id for p in pairs} | {p.other_id for p in pairs if p.other_id is not None}
        subs = {x.id: x for x in s.scalars(select(Submission).where(Submission.id.in_(ids)))} if ids else {}
        return [{"pair": p, "a": subs.get(p.submission_id), "b": subs.get(p.other_id) if p.other_id else None}
                for p in pairs]


def counts(db: Database) -> tuple[int, int]:
    """(submissions compared, accepted submissions waiting to be)."""
    with db.session() as s:
        marked = s.scalar(select(func.count()).select_from(SimilarityMark)) or 0
        waiting = s.scalar(select(func.count()).select_from(Submission).where(accepted_clause(), _unmarked())) or 0
    return marked, waiting

"""The staff's similarity pages: the pairs of each exercise ranked by score, and one pair side by side with the
parts they share marked. They only read what the similarity worker stored (web/similarity.py); the marks of
one pair are re-derived from its two codes when it is shown."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, render_template, request

from . import similarity as sim
from .code_match import compare_codes, marked_html
from .grading import ready_grading
from .models import SimilarityPair, Submission
from .staff import staff_only

bp = Blueprint("similarity", __name__, url_prefix="/staff/similarity")


bp.before_request(staff_only)


@bp.get("/")
def index():
    grading = ready_grading()
    exercise = request.args.get("exercise", "").strip()[:128]
    rows = sim.exercise_pairs(grading.db, exercise or None)
    by_exercise: dict[str, list[dict]] = {}
    for row in rows:
        by_exercise.setdefault(row["pair"].exercise, []).append(row)
    marked, waiting = sim.counts(grading.db)
    return render_template("server/similarity.html", by_exercise=by_exercise, exercise=exercise, marked=marked,
                           waiting=waiting, threshold=sim.THRESHOLD)


@bp.get("/<rowid:pair_id>")
def pair(pair_id: int):
    grading = ready_grading()
    with grading.db.session() as s:
        p = s.get(SimilarityPair, pair_id)
        if p is None:
            abort(404)
        a = s.get(Submission, p.submission_id)
        b = s.get(Submission, p.other_id) if p.other_id is not None else None
    if b is not None:
        other_code = b.code
    else:  # the reference as it is now (None: the exercise is gone, or the engine is not importable here)
        other_code = sim.reference_for(current_app.extensions["minisgl.catalog"].get(), p.exercise)
    missing, other_code = other_code is None, other_code or ""
    match = compare_codes(a.code, other_code)
    return render_template("server/similarity_pair.html", pair=p, a=a, b=b, reference_missing=missing,
                           a_html=marked_html(a.code, match.spans_a), b_html=marked_html(other_code, match.spans_b))

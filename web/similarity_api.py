"""``GET /api/v1/similarity``: the similarity report as JSON, for staff (what ``/staff/similarity`` lists).

Its OpenAPI description is ``web/apidoc/similarity.py``.
"""

from __future__ import annotations

import re

from flask import Blueprint, g, jsonify, request, url_for

from judge.exercise import SLUG_RE

from . import auth
from . import similarity as sim
from .errors import ApiError
from .grading import ready_grading
from .models import Submission
from .submissions import iso

bp = Blueprint("similarity_api", __name__, url_prefix="/api/v1")
MAX_LIMIT = 500


def _side(sub: Submission | None, sid: int | None) -> dict | None:
    if sid is None:
        return None
    return {"id": sid, "user": sub.user.username if sub else None, "created_at": iso(sub.created_at) if sub else None}


@bp.get("/similarity")
@auth.require_user
def report():
    if not g.user.is_staff:
        raise ApiError(403, "staff_only", "The similarity report is for staff.")
    exercise = request.args.get("exercise", "").strip()
    if exercise and (len(exercise) > 64 or not SLUG_RE.match(exercise)):
        raise ApiError(400, "invalid_parameter", f"'exercise' must be an id like radix-lock; got {exercise[:80]!r}")
    raw = request.args.get("limit", "200").strip()
    if not re.fullmatch(r"[0-9]{1,4}", raw) or not 1 <= int(raw) <= MAX_LIMIT:
        raise ApiError(400, "invalid_parameter", f"'limit' must be a whole number, 1 to {MAX_LIMIT}; got {raw[:20]!r}")
    grading = ready_grading()
    rows = sim.exercise_pairs(grading.db, exercise or None, int(raw))
    compared, waiting = sim.counts(grading.db)
    return jsonify({
        "threshold": sim.THRESHOLD, "compared": compared, "waiting": waiting,
        "pairs": [{
            "id": r["pair"].id, "exercise": r["pair"].exercise, "score": r["pair"].score,
            "submission": _side(r["a"], r["pair"].submission_id), "other": _side(r["b"], r["pair"].other_id),
            "computed_at": iso(r["pair"].computed_at),
            "link": url_for("similarity.pair", pair_id=r["pair"].id),
        } for r in rows],
    })

"""A learner's progress and code on the server, so they follow the learner to another browser (``/api/v1``).

- ``GET /progress``: per exercise, the grading server's verdicts of the logged-in learner: ``solved`` once a
  graded (not run-only) submission was accepted, else ``tried``; ``attempts`` (graded submissions judged),
  ``first_accepted_at``, ``last_at`` and the ``best`` one (accepted if any, else the most tests passed, the
  latest on a tie). Run-only, queued, running and cancelled submissions do not count. The pages merge it with
  the browser's own progress (``web/frontend/src/progress.js``: the better status wins).
- ``GET /workspaces``: the exercises with saved code (``exercise``, ``saved_at``, ``size`` in UTF-8 bytes).
- ``GET|PUT|DELETE /workspaces/<exercise>``: the saved code of one exercise. PUT ``{"code": ...}`` saves it
  (413 over ``MAX_CODE_BYTES``, like a submission); GET is a 404 ``no_workspace`` when nothing is saved; DELETE
  is 204 whether or not there was any.

Only ever the caller's own. A session cookie's PUT and DELETE need the X-CSRF-Token header (``require_user``).
"""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, g
from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from .api import entry_for
from .auth import require_user
from .db import utcnow
from .errors import ApiError, json_object
from .grading import ready_grading
from .models import DONE, Submission, Workspace
from .submissions import check_code, iso, limit_body

bp = Blueprint("progress", __name__, url_prefix="/api/v1")
ACCEPTED = "accepted"


def _passed(verdict_text: str | None) -> int:
    try:
        passed = json.loads(verdict_text or "{}").get("passed")
    except (ValueError, AttributeError):
        return 0
    return passed if isinstance(passed, int) else 0


def _best(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The best of one exercise's judged submissions: accepted first, then more tests passed, then newer."""
    return max(rows, key=lambda r: (r["result"] == ACCEPTED, r["passed"], r["id"]))


@bp.get("/progress")
@require_user
def progress():
    grading = ready_grading()
    graded = (Submission.user_id == g.user.id, Submission.state == DONE, Submission.run_only.is_(False))
    by_exercise: dict[str, list[dict[str, Any]]] = {}
    with grading.db.session() as s:
        for sub_id, exercise, result, finished in s.execute(
                select(Submission.id, Submission.exercise, Submission.result, Submission.finished_at).where(*graded)):
            by_exercise.setdefault(exercise, []).append(
                {"id": sub_id, "result": result, "passed": 0, "finished_at": finished})
        # the tests passed matter only where nothing was accepted: only those verdicts are read (and the best's)
        unsolved = {ex for ex, rows in by_exercise.items() if all(r["result"] != ACCEPTED for r in rows)}
        if unsolved:
            passed = {i: _passed(v) for i, v in s.execute(select(Submission.id, Submission.verdict)
                                                          .where(*graded, Submission.exercise.in_(sorted(unsolved))))}
            for ex in unsolved:
                for r in by_exercise[ex]:
                    r["passed"] = passed.get(r["id"], 0)
        best = {ex: _best(rows) for ex, rows in by_exercise.items()}
        solved = {b["id"]: b for ex, b in best.items() if ex not in unsolved}
        if solved:
            for i, v in s.execute(select(Submission.id, Submission.verdict).where(Submission.id.in_(list(solved)))):
                solved[i]["passed"] = _passed(v)
    out = {}
    for exercise, rows in sorted(by_exercise.items()):
        b = best[exercise]
        accepted = [r["finished_at"] for r in rows if r["result"] == ACCEPTED and r["finished_at"]]
        out[exercise] = {
            "status": "solved" if b["result"] == ACCEPTED else "tried",
            "attempts": len(rows),
            "first_accepted_at": iso(min(accepted, default=None)),
            "last_at": iso(max((r["finished_at"] for r in rows if r["finished_at"]), default=None)),
            "best": {"submission": b["id"], "result": b["result"], "passed": b["passed"],
                     "finished_at": iso(b["finished_at"])},
        }
    return {"exercises": out}


def _size(code: str) -> int:
    return len(code.encode("utf-8"))


def _shown(w: Workspace, *, code: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"exercise": w.exercise, "saved_at": iso(w.saved_at), "size": _size(w.code)}
    if code:
        d["code"] = w.code
    return d


bp.before_request(limit_body)


@bp.get("/workspaces")
@require_user
def workspaces():
    grading = ready_grading()
    with grading.db.session() as s:
        rows = s.scalars(select(Workspace).where(Workspace.user_id == g.user.id).order_by(Workspace.exercise))
        return {"workspaces": [_shown(w, code=False) for w in rows]}


@bp.get("/workspaces/<exercise>")
@require_user
def workspace(exercise: str):
    slug = entry_for(exercise).slug
    grading = ready_grading()
    with grading.db.session() as s:
        w = s.get(Workspace, (g.user.id, slug))
        if w is None:
            raise ApiError(404, "no_workspace", f"You have no code saved for {slug!r}.")
        return _shown(w, code=True)


def _code_from_body() -> str:
    data = json_object()
    unknown = sorted(set(data) - {"code"})
    if unknown:
        raise ApiError(400, "unknown_field", f"Unknown field(s): {', '.join(map(str, unknown))[:200]}.")
    code = data.get("code")
    if not isinstance(code, str):
        raise ApiError(400, "bad_code", "'code' must be the code to save (a string).", field="code")
    return check_code(code, field="code")


@bp.put("/workspaces/<exercise>")
@require_user
def save(exercise: str):
    slug = entry_for(exercise).slug
    code = _code_from_body()
    grading = ready_grading()
    now = utcnow()
    insert = sqlite_insert if grading.db.is_sqlite else pg_insert
    stmt = insert(Workspace).values(user_id=g.user.id, exercise=slug, code=code, saved_at=now)
    stmt = stmt.on_conflict_do_update(index_elements=[Workspace.user_id, Workspace.exercise],
                                      set_={"code": code, "saved_at": now})
    with grading.db.session() as s:  # one statement: two saves at once, the later wins, neither fails
        s.execute(stmt)
    return {"exercise": slug, "saved_at": iso(now), "size": _size(code)}


@bp.delete("/workspaces/<exercise>")
@require_user
def forget(exercise: str):
    slug = entry_for(exercise).slug
    grading = ready_grading()
    with grading.db.session() as s:
        s.execute(delete(Workspace).where(Workspace.user_id == g.user.id, Workspace.exercise == slug))
    return "", 204

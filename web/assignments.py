"""Assignments: the JSON API (``/api/v1/assignments``) and the staff pages (``/staff/assignments``).

- ``GET /api/v1/assignments``: a learner, the open assignments with their own window and per-exercise status;
  staff, every assignment with its extensions. ``GET /api/v1/assignments/<id>``: one (a learner: only an open one).
- Staff only (403 for a learner): ``POST /api/v1/assignments``, ``PATCH``/``DELETE /api/v1/assignments/<id>``,
  ``PUT``/``DELETE /api/v1/assignments/<id>/extensions/<username>``.
- The pages: the list, a new one, the edit page with the extensions and a form to grant or remove one. Times in
  the forms are ``datetime-local`` read as UTC.

The checks and the changes are ``web/assignment_ops.py``'s.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Blueprint, abort, current_app, g, redirect, render_template, request, url_for
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from . import assignment_ops as ops
from . import auth
from .api import catalog
from .db import utcnow
from .deadlines import window
from .errors import ApiError, json_object
from .grading import ready_grading
from .models import Assignment
from .staff import staff_only

api_bp = Blueprint("assignments_api", __name__, url_prefix="/api/v1/assignments")
staff_bp = Blueprint("assignments", __name__, url_prefix="/staff/assignments")
FIELDS = {"name", "exercises", "opens_at", "due_at", "late_until"}


def known_exercises() -> list[str]:
    return [en.slug for en in catalog().entries]


def _api_error(e: ops.AssignmentError) -> ApiError:
    return ApiError(e.status, e.code, str(e), **({"field": e.field} if e.field else {}))


def _staff() -> None:
    if not g.user.is_staff:
        raise ApiError(403, "forbidden", "Only staff change assignments.")


def _get(s, assignment_id: int) -> Assignment:
    a = s.get(Assignment, assignment_id) if 0 < assignment_id < 2**31 else None
    if a is None:
        raise ApiError(404, "not_found", f"No assignment {assignment_id}.")
    return a


def _body() -> dict[str, Any]:
    data = json_object()
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise ApiError(400, "unknown_field", f"Unknown field(s): {', '.join(map(str, unknown))[:200]}.")
    return data


def _change(assignment_id: int | None, data: dict[str, Any]) -> dict[str, Any]:
    grading = ready_grading()
    try:
        with grading.db.session(write_lock=True) as s:
            a = None if assignment_id is None else _get(s, assignment_id)
            a = ops.apply(s, a, data, known_exercises(), by=g.user.username)
            return ops.staff_json(s, a)
    except ops.AssignmentError as e:
        raise _api_error(e) from None
    except IntegrityError:  # the same name at the same moment
        raise ApiError(409, "name_taken", "An assignment of that name was just made.", field="name") from None


@api_bp.get("")
@auth.require_user
def api_listing():
    grading = ready_grading()
    with grading.db.session() as s:
        if g.user.is_staff:
            rows = [ops.staff_json(s, a) for a in s.scalars(select(Assignment).order_by(Assignment.due_at,
                                                                                            Assignment.id))]
        else:
            rows = ops.open_for(s, g.user.id)
    return {"assignments": rows}


@api_bp.get("/<int:assignment_id>")
@auth.require_user
def api_show(assignment_id: int):
    grading = ready_grading()
    with grading.db.session() as s:
        if g.user.is_staff:
            return ops.staff_json(s, _get(s, assignment_id))
        seen = ops.open_for(s, g.user.id, ids=[assignment_id]) if 0 < assignment_id < 2**31 else []
    if not seen:
        raise ApiError(404, "not_found", f"No assignment {assignment_id}.")
    return seen[0]


@api_bp.post("")
@auth.require_user
def api_create():
    _staff()
    body = _change(None, _body())
    resp = current_app.json.response(body)
    resp.status_code = 201
    resp.headers["Location"] = f"/api/v1/assignments/{body['id']}"
    return resp


@api_bp.patch("/<int:assignment_id>")
@auth.require_user
def api_edit(assignment_id: int):
    _staff()
    return _change(assignment_id, _body())


@api_bp.delete("/<int:assignment_id>")
@auth.require_user
def api_delete(assignment_id: int):
    _staff()
    with ready_grading().db.session() as s:
        s.delete(_get(s, assignment_id))
    return "", 204


@api_bp.put("/<int:assignment_id>/extensions/<username>")
@auth.require_user
def api_extend(assignment_id: int, username: str):
    _staff()
    data = json_object()
    unknown = sorted(set(data) - {"due_at"})
    if unknown:
        raise ApiError(400, "unknown_field", f"Unknown field(s): {', '.join(map(str, unknown))[:200]}.")
    try:
        with ready_grading().db.session(write_lock=True) as s:
            a = _get(s, assignment_id)
            ops.extend(s, a, username, data.get("due_at"), by=g.user.username)
            return ops.staff_json(s, a)
    except ops.AssignmentError as e:
        raise _api_error(e) from None


@api_bp.delete("/<int:assignment_id>/extensions/<username>")
@auth.require_user
def api_unextend(assignment_id: int, username: str):
    _staff()
    try:
        with ready_grading().db.session() as s:
            if not ops.unextend(s, _get(s, assignment_id), username):
                raise ApiError(404, "not_found", f"{username[:64]!r} has no extension of assignment {assignment_id}.")
    except ops.AssignmentError as e:
        raise _api_error(e) from None
    return "", 204


# --- the staff pages ------------------------------------------------------------------------------------------

staff_bp.before_request(staff_only)


def local_value(t: dt.datetime | None) -> str:
    """A time as a ``datetime-local`` input's value (UTC): minutes, or seconds when it has them."""
    if t is None:
        return ""
    return t.strftime("%Y-%m-%dT%H:%M:%S" if t.second else "%Y-%m-%dT%H:%M")


@staff_bp.app_template_filter("utc")
def utc_text(t: dt.datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M") + (t.strftime(":%S") if t.second else "") + " UTC" if t else ""


def _form_data() -> dict[str, Any]:
    f = request.form
    return {"name": f.get("name", ""), "exercises": f.get("exercises", ""), "opens_at": f.get("opens_at") or None,
            "due_at": f.get("due_at") or None, "late_until": f.get("late_until") or None}


def _form(a: Assignment | None, values: dict[str, Any] | None = None, error: str = "", status: int = 200, s=None,
          ext_error: str = "", ext_values: dict[str, str] | None = None):
    if values is None:
        values = {"name": a.name if a else "", "exercises": ", ".join(a.exercises) if a else "",
                  **{f: local_value(getattr(a, f, None)) for f in ops.TIME_FIELDS}}
    exts = ops.extensions(s, a) if a is not None and s is not None else []
    windows = {name: window(a, e) for name, e in exts}
    return render_template("server/assignment_form.html", a=a, values=values, error=error, exts=exts,
                           windows=windows, catalog=catalog(), ext_error=ext_error,
                           ext_values=ext_values or {"username": "", "due_at": ""}), status


@staff_bp.get("/")
def index():
    with ready_grading().db.session() as s:
        rows = list(s.scalars(select(Assignment).order_by(Assignment.due_at, Assignment.id)))
        counts = {a.id: len(ops.extensions(s, a)) for a in rows}
    return render_template("server/assignments.html", assignments=rows, counts=counts, now=utcnow())


@staff_bp.route("/new", methods=["GET", "POST"])
def new():
    if request.method == "GET":
        return _form(None)
    auth.check_csrf(400)
    values = _form_data()
    try:
        with ready_grading().db.session(write_lock=True) as s:
            a = ops.apply(s, None, values, known_exercises(), by=g.user.username)
            new_id = a.id
    except ops.AssignmentError as e:
        return _form(None, {k: v or "" for k, v in values.items()}, str(e), 400)
    return redirect(url_for("assignments.edit", assignment_id=new_id, saved=1))


def _found(s, assignment_id: int) -> Assignment:
    a = s.get(Assignment, assignment_id)
    if a is None:
        abort(404, f"No assignment {assignment_id}.")
    return a


@staff_bp.route("/<rowid:assignment_id>", methods=["GET", "POST"])
def edit(assignment_id: int):
    with ready_grading().db.session(write_lock=request.method == "POST") as s:
        a = _found(s, assignment_id)
        if request.method == "GET":
            return _form(a, s=s)
        auth.check_csrf(400)
        values = _form_data()
        try:
            ops.apply(s, a, values, known_exercises(), by=g.user.username)
        except ops.AssignmentError as e:  # refused before anything changed
            return _form(a, {k: v or "" for k, v in values.items()}, str(e), 400, s=s)
    return redirect(url_for("assignments.edit", assignment_id=assignment_id, saved=1))


@staff_bp.post("/<rowid:assignment_id>/delete")
def delete(assignment_id: int):
    auth.check_csrf(400)
    with ready_grading().db.session() as s:
        s.delete(_found(s, assignment_id))
    return redirect(url_for("assignments.index"))


@staff_bp.post("/<rowid:assignment_id>/extensions")
def extend(assignment_id: int):
    auth.check_csrf(400)
    username, due = request.form.get("username", ""), request.form.get("due_at", "")
    with ready_grading().db.session(write_lock=True) as s:
        a = _found(s, assignment_id)
        try:
            ops.extend(s, a, username, due or None, by=g.user.username)
        except ops.AssignmentError as e:
            return _form(a, s=s, ext_error=str(e), ext_values={"username": username, "due_at": due}, status=400)
    return redirect(url_for("assignments.edit", assignment_id=assignment_id, saved=1) + "#extensions")


@staff_bp.post("/<rowid:assignment_id>/extensions/<username>/delete")
def unextend(assignment_id: int, username: str):
    auth.check_csrf(400)
    with ready_grading().db.session() as s:
        try:
            ops.unextend(s, _found(s, assignment_id), username)
        except ops.AssignmentError as e:
            abort(404, str(e))
    return redirect(url_for("assignments.edit", assignment_id=assignment_id) + "#extensions")

"""The gradebook's views, staff only: the page ``/staff/gradebook`` (a GET form of filters), its CSV
``/staff/gradebook.csv``, one learner's history ``/staff/gradebook/<username>``; and the API's
``GET /api/v1/gradebook`` (JSON) and ``GET /api/v1/gradebook.csv``, with the same filters as query parameters
(``assignment``: an assignment's id, ``chapter``: a chapter's id, ``group``: a group's name).

The pages take the session cookie (a learner: 403; nobody: the login page); the API also a staff member's API
token (a learner: 403; nobody: 401). Its description: ``web/apidoc/gradebook.py``.
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, render_template, request
from sqlalchemy import select

from judge.exercise import SLUG_RE

from . import auth
from .errors import ApiError
from .gradebook import Filter, UnknownFilter, gradebook
from .gradebook_export import cells_html, csv_text, json_body, standing_values
from .grading import ready_grading
from .models import Assignment, Submission, SubmissionTiming, User
from .staff import staff_only

pages = Blueprint("gradebook", __name__)
api = Blueprint("gradebook_api", __name__, url_prefix="/api/v1")
PARAMS = ("assignment", "chapter", "group")
HISTORY_LIMIT = 500  # a learner's submissions on their page, newest first


class BadFilter(ValueError):
    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


def _catalog():
    return current_app.extensions["minisgl.catalog"].get()


def parse_filter(args) -> Filter:
    """The filters of a query string; ``BadFilter`` naming the parameter when one is malformed."""
    values = {}
    for name in PARAMS:
        given = args.getlist(name)
        if len(given) > 1:
            raise BadFilter(name, f"'{name}' is given {len(given)} times; give it once")
        values[name] = given[0].strip(" ") if given else ""  # only spaces: a control character is no empty filter
    assignment = None
    if values["assignment"]:
        if not values["assignment"].isdigit() or not 0 < int(values["assignment"]) < 2**31:
            raise BadFilter("assignment", f"'assignment' must be an assignment's id (a number); got "
                            f"{values['assignment'][:40]!r}")
        assignment = int(values["assignment"])
    chapter = values["chapter"]
    if chapter and (len(chapter) > 64 or not SLUG_RE.match(chapter)):
        raise BadFilter("chapter", f"'chapter' must be a chapter's id like cuda-graph; got {chapter[:40]!r}")
    group = values["group"]
    if len(group) > 64 or "\x00" in group:
        raise BadFilter("group", "'group' must be a group's name (at most 64 characters)")
    return Filter(assignment, chapter, group)


def _compute(f: Filter):
    with ready_grading().db.session() as s:
        return gradebook(s, _catalog(), f)


def _csv_response(gb) -> Response:
    return Response(csv_text(gb), mimetype="text/csv",
                    headers={"Content-Disposition": 'attachment; filename="gradebook.csv"'})


# --- pages ----------------------------------------------------------------------------------------------------


pages.before_request(staff_only)


@pages.get("/staff/gradebook")
def page():
    error, gb, f = None, None, Filter()
    try:
        f = parse_filter(request.args)
        gb = _compute(f)
    except (BadFilter, UnknownFilter) as e:
        error = str(e)
    with ready_grading().db.session() as s:
        assignments = list(s.execute(select(Assignment.id, Assignment.name).order_by(Assignment.due_at,
                                                                                     Assignment.id)))
        groups = list(s.scalars(select(User.group_name).where(User.is_staff.is_(False), User.group_name != "")
                                .distinct().order_by(User.group_name)))
    query = {k: v for k, v in request.args.items() if k in PARAMS and v}
    body = render_template("server/gradebook.html", gb=gb, error=error, f=f, assignments=assignments, groups=groups,
                           chapters=_catalog().chapters, query=query, cells_html=cells_html,
                           standing_values=standing_values)
    return body, 400 if error else 200


@pages.get("/staff/gradebook.csv")
def page_csv():
    try:
        return _csv_response(_compute(parse_filter(request.args)))
    except (BadFilter, UnknownFilter) as e:
        abort(400, str(e))


@pages.get("/staff/gradebook/<username>")
def learner(username: str):
    if not auth.USERNAME_RE.match(username.lower()):
        abort(404, f"No user {username[:64]!r}.")
    with ready_grading().db.session() as s:
        user = s.scalar(select(User).where(User.username == username.lower()))
        if user is None:
            abort(404, f"No user {username[:64]!r}.")
        subs = list(s.scalars(select(Submission).where(Submission.user_id == user.id)
                              .order_by(Submission.created_at.desc(), Submission.id.desc()).limit(HISTORY_LIMIT)))
        names = dict(s.execute(select(Assignment.id, Assignment.name)).all())
        timings: dict[int, list[tuple[str, str]]] = {}
        for sid, aid, timing in s.execute(select(SubmissionTiming.submission_id, SubmissionTiming.assignment_id,
                                                 SubmissionTiming.timing)
                                          .where(SubmissionTiming.submission_id.in_([x.id for x in subs]))):
            timings.setdefault(sid, []).append((names.get(aid, str(aid)), timing))
        history = [{"sub": x, "verdict": x.verdict_dict(), "timings": sorted(timings.get(x.id, []))} for x in subs]
        return render_template("server/gradebook_learner.html", learner=user, history=history,
                               limit=HISTORY_LIMIT, titles={en.slug: en.exercise.title for en in _catalog().entries})


# --- the API --------------------------------------------------------------------------------------------------


def _api_filter() -> Filter:
    user = auth.current_user()
    if user is None:
        raise ApiError(401, "unauthorized", "Log in, or send 'Authorization: Bearer <your API token>'.")
    if not user.is_staff:
        raise ApiError(403, "forbidden", "The gradebook is for staff.")
    try:
        return parse_filter(request.args)
    except BadFilter as e:
        raise ApiError(400, "invalid_parameter", str(e)) from None


def _api_compute():
    f = _api_filter()
    try:
        return _compute(f)
    except UnknownFilter as e:
        raise ApiError(404, "not_found", str(e)) from None


@api.get("/gradebook")
def api_json():
    return json_body(_api_compute())


@api.get("/gradebook.csv")
def api_csv():
    return _csv_response(_api_compute())

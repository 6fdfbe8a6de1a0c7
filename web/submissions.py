"""The learner API of the grading server, under ``/api/v1``.

- ``POST /submissions``: ``{"exercise", "code", "mode": "gpu"|"cpu", "run": false}``: 201 with the
  submission; 413 for code over ``MAX_CODE_BYTES``; 429 + ``Retry-After`` over the per-user rate limit,
  over ``MAX_QUEUED_PER_USER`` of the learner's submissions waiting, or the site-wide queue cap; 503 +
  ``Retry-After`` while intake is paused.
- ``GET /submissions`` (yours; staff: ``?all=1``), ``GET /submissions/<id>``: status, queue position, verdict.
- ``GET /submissions/<id>/events``: Server-Sent Events ``queued`` (with position), ``running``, then
  ``done`` (with the verdict) or ``cancelled``; a ``: heartbeat`` comment every ``SSE_HEARTBEAT_SECONDS``.
  429 + ``Retry-After`` over ``STREAMS_PER_USER`` open streams of this account or ``STREAMS_TOTAL`` on the site.
- ``POST /submissions/<id>/cancel``.
- ``GET /grading``: whether the site has runners (the page shows "Judge on the grading server" then), and
  each one online as the page names it (``online``: ``runner``, ``gpu`` or null, ``modes``).
- A submission's ``runner`` is the name of the runner that has (had) it, ``runner_label`` how the page names
  it ("this machine's runner" for the embedded default's, else "runner NAME"); ``judged_on`` is what that
  runner said about where it judged (``gpu``, ``device``, ``mode``, ``emulated``, ``note``; ``runner``).

Another learner's submission is a 404, as if it did not exist; staff see every submission.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from flask import Blueprint, Response, current_app, g, request, url_for
from sqlalchemy import select

from judge.exercise import SLUG_RE, ExerciseError, list_exercises
from judge.modes import SUBMISSION_MODES, judge_mode

from .assignment_ops import iso, timings_of
from .auth import credential_check, current_user, require_user
from .deadlines import record_timings
from .errors import ApiError, json_object
from .grading import Grading, ready_grading
from .models import DONE, FINAL_STATES, Submission, runner_label
from .queue import Refused
from .slots import Full
from .watch import stream

bp = Blueprint("submissions", __name__)
FIELDS = {"exercise", "code", "mode", "run"}


def _exercise_modes() -> dict[str, tuple[str, ...]]:
    """Each exercise's modes, from the app's ``EXERCISES_DIR`` (None: judge's default)."""
    return _modes_under(current_app.config.get("EXERCISES_DIR"))


@functools.cache
def _modes_under(root: str | None) -> dict[str, tuple[str, ...]]:
    try:
        return {e.slug: tuple(e.modes) for e in list_exercises(root)}
    except ExerciseError:
        return {}


def submission_json(grading: Grading, s, sub: Submission, *, verdict: bool = True,
                    timings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": sub.id,
        "exercise": sub.exercise,
        "mode": sub.mode,
        "run": sub.run_only,
        "status": sub.state,
        "position": grading.queue.position(s, sub),
        "result": sub.result,
        "attempts": sub.attempts,
        "user": sub.user.username if sub.user else None,
        "runner": sub.runner.name if sub.runner and sub.state != "queued" else None,
        "runner_label": runner_label(sub.runner.name) if sub.runner and sub.state != "queued" else None,
        "created_at": iso(sub.created_at),
        "claimed_at": iso(sub.claimed_at),
        "finished_at": iso(sub.finished_at),
        "judged_on": sub.judged_on_dict(),
        "timings": timings if timings is not None else timings_of(s, [sub.id])[sub.id],
        "links": {
            "self": f"/api/v1/submissions/{sub.id}",
            "events": f"/api/v1/submissions/{sub.id}/events",
            "cancel": f"/api/v1/submissions/{sub.id}/cancel",
        },
    }
    if verdict:
        d["verdict"] = sub.verdict_dict()
    return d


def _own(s, sub_id: int) -> Submission:
    sub = s.get(Submission, sub_id)
    if sub is None or (sub.user_id != g.user.id and not g.user.is_staff):
        raise ApiError(404, "not_found", f"No submission {sub_id}.")
    return sub


def limit_body() -> None:
    """A ``before_request`` of every route whose body carries code: the code limit, plus room for the JSON around it
    (escaping can double it); checked before the body is read."""
    request.max_content_length = 2 * int(current_app.config["MAX_CODE_BYTES"]) + 4096


def check_code(code: str, field: str | None = None) -> str:
    """``code`` if it may be stored: at most ``MAX_CODE_BYTES`` of UTF-8 (413), no NUL, no lone surrogates (400)."""
    size = len(code.encode("utf-8", "surrogatepass"))
    limit = int(current_app.config["MAX_CODE_BYTES"])
    if size > limit:
        raise ApiError(413, "code_too_large", f"The code is {size} bytes; the limit is {limit}.")
    named = {"field": field} if field else {}  # the body's field, where the route's errors name it
    if "\x00" in code:
        raise ApiError(400, "bad_code", "The code contains a NUL character.", **named)
    try:
        code.encode("utf-8")
    except UnicodeEncodeError:
        raise ApiError(400, "bad_code", "The code is not valid Unicode (lone surrogates).", **named) from None
    return code


bp.before_request(limit_body)


@bp.post("/api/v1/submissions")
@require_user
def create():
    grading = ready_grading()
    data = json_object()
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise ApiError(400, "unknown_field", f"Unknown field(s): {', '.join(map(str, unknown))[:200]}.")
    exercise, code, mode, run = data.get("exercise"), data.get("code"), data.get("mode", "gpu"), data.get("run", False)
    if not isinstance(exercise, str) or not exercise:
        raise ApiError(400, "bad_exercise", "'exercise' must be an exercise id (a string).")
    modes = _exercise_modes()
    if exercise not in modes:
        raise ApiError(404, "unknown_exercise", f"No exercise {exercise[:80]!r}.")
    if mode not in SUBMISSION_MODES:
        raise ApiError(400, "bad_mode", f"'mode' must be one of {list(SUBMISSION_MODES)}.")
    if judge_mode(mode) not in modes[exercise]:
        raise ApiError(400, "mode_not_supported", f"Exercise {exercise!r} is not judged in mode {mode!r}.")
    if not isinstance(run, bool):
        raise ApiError(400, "bad_run", "'run' must be true (the visible examples only) or false (every test).")
    if not isinstance(code, str):
        raise ApiError(400, "bad_code", "'code' must be the submission's source (a string).")
    check_code(code)
    try:
        sub = grading.queue.enqueue(g.user.id, exercise, mode, code, run, also=record_timings)
    except Refused as e:
        status = 503 if e.code == "intake_paused" else 429
        raise ApiError(status, e.code, e.message, retry_after=e.retry_after) from None
    with grading.db.session() as s:
        body = submission_json(grading, s, _own(s, sub.id))
    resp = current_app.json.response(body)
    resp.status_code = 201
    resp.headers["Location"] = body["links"]["self"]
    return resp


@bp.get("/api/v1/submissions")
@require_user
def listing():
    grading = ready_grading()
    try:
        limit = min(max(int(request.args.get("limit", 20)), 1), 200)
    except ValueError:
        raise ApiError(400, "bad_limit", "'limit' must be a number from 1 to 200.") from None
    everyone = request.args.get("all") in ("1", "true") and g.user.is_staff
    with grading.db.session() as s:
        q = select(Submission).order_by(Submission.id.desc()).limit(limit)
        if not everyone:
            q = q.where(Submission.user_id == g.user.id)
        exercise = request.args.get("exercise")
        if exercise:
            if len(exercise) > 128 or not SLUG_RE.match(exercise):  # a NUL byte would be PostgreSQL's error
                raise ApiError(400, "bad_exercise", "'exercise' must be an exercise id (a slug like "
                               "graph-capture-loop).")
            q = q.where(Submission.exercise == exercise)
        subs = list(s.scalars(q))
        timings = timings_of(s, [sub.id for sub in subs])
        rows = [submission_json(grading, s, sub, verdict=False, timings=timings[sub.id]) for sub in subs]
    return {"submissions": rows}


@bp.get("/api/v1/submissions/<rowid:sub_id>")
@require_user
def show(sub_id: int):
    return _shown(ready_grading(), sub_id)


def _shown(grading: Grading, sub_id: int) -> dict[str, Any]:
    with grading.db.session() as s:
        return submission_json(grading, s, _own(s, sub_id))


@bp.post("/api/v1/submissions/<rowid:sub_id>/cancel")
@require_user
def cancel(sub_id: int):
    grading = ready_grading()
    with grading.db.session() as s:
        sub = _own(s, sub_id)
        if sub.state in FINAL_STATES:
            raise ApiError(409, "already_finished", f"Submission {sub_id} is {sub.state} already.")
    grading.queue.cancel(sub_id)
    return _shown(grading, sub_id)


@bp.get("/api/v1/submissions/<rowid:sub_id>/events")
@require_user
def events(sub_id: int):
    """The stream takes one of the user's (and the site's) stream slots first, else 429; the slot is freed when
    the response is closed. It re-checks its credential every ``STREAM_RECHECK_SECONDS`` and ends without an
    event when it is gone (the browser's reconnection then gets a 401)."""
    grading = ready_grading()
    with grading.db.session() as s:
        _own(s, sub_id)
    heartbeat = float(current_app.config["SSE_HEARTBEAT_SECONDS"])
    still_valid = credential_check()
    try:
        slot = grading.slots.take(g.user.id, sub_id)
    except Full as e:
        raise ApiError(429, e.code, e.message, retry_after=max(1, math.ceil(heartbeat))) from None

    def full() -> tuple[str, dict[str, Any]]:
        with grading.db.session() as s:
            sub = s.get(Submission, sub_id)
            data = submission_json(grading, s, sub, verdict=sub.state == DONE)
        return sub.state, data

    body = stream(grading.board, sub_id, full, heartbeat, still_valid,
                  float(current_app.config["STREAM_RECHECK_SECONDS"]))
    response = Response(body, mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    response.call_on_close(lambda: grading.slots.free(slot))
    return response


@bp.get("/api/v1/grading")
def status():
    """Public: is GPU judging available here (runners seen in the last 90 s), and is intake open."""
    grading = ready_grading()
    runners = grading.queue.runners_online()
    user = current_user() if request.headers.get("Authorization") is None else None
    with grading.db.session() as s:  # one session for both (under load, each checkout waits its turn)
        queued = s.query(Submission).filter(Submission.state == "queued").count()
        paused = grading.queue.intake_paused(s)
    return {
        "runners": len(runners),
        "gpus": sorted({r.gpu for r in runners if r.gpu}),
        "modes": sorted({m for r in runners for m in r.modes.split(",") if m}),
        "online": [{"runner": runner_label(r.name), "gpu": r.gpu, "modes": sorted(m for m in r.modes.split(",") if m)}
                   for r in runners],
        "intake_open": not paused,
        "queued": queued,
        "logged_in": user is not None,
        "login_url": url_for("accounts.login"),
    }

"""The staff page: the queue, the runners and their last heartbeat; requeue, cancel, pause intake."""

from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, request, url_for
from sqlalchemy import func, select

from . import auth
from .db import utcnow
from .grading import get_grading, ready_grading
from .models import QUEUED, RUNNING, Runner, Submission

bp = Blueprint("staff", __name__, url_prefix="/staff")


def staff_only():
    """Every staff page's gate (``before_request``): logged out, the login page (back here after); a learner, 403."""
    user = auth.page_user()
    if user is None:
        return redirect(url_for("accounts.login", next=request.full_path.rstrip("?")))
    if not user.is_staff:
        abort(403)
    return None


bp.before_request(staff_only)


@bp.get("/")
def index():
    grading = ready_grading()
    show = request.args.get("show", "active")
    with grading.db.session() as s:
        q = select(Submission).order_by(Submission.id.desc()).limit(200)
        if show == "active":
            q = q.where(Submission.state.in_((QUEUED, RUNNING)))
        jobs = list(s.scalars(q))
        counts = dict(s.execute(select(Submission.state, func.count()).group_by(Submission.state)).all())
        runners = list(s.scalars(select(Runner).order_by(Runner.name)))
        in_hand = dict(s.execute(select(Submission.runner_id, func.count()).where(Submission.state == RUNNING)
                                 .group_by(Submission.runner_id)).all())
    return render_template("server/staff.html", jobs=jobs, counts=counts, runners=runners, in_hand=in_hand,
                           now=utcnow(), paused=grading.queue.intake_paused(), show=show)


@bp.post("/jobs/<rowid:job_id>/<action>")
def job_action(job_id: int, action: str):
    auth.check_csrf(400)
    queue = get_grading().queue
    if action == "requeue":
        queue.requeue(job_id)
    elif action == "cancel":
        queue.cancel(job_id)
    else:
        abort(404)
    return redirect(url_for("staff.index"))


@bp.post("/intake")
def intake():
    auth.check_csrf(400)
    get_grading().queue.set_intake_paused(request.form.get("paused") == "1")
    return redirect(url_for("staff.index"))

"""The runner API, under ``/api/v1/runner``: runners pull jobs over HTTPS with their own tokens.

- ``POST /claim`` ``{"modes": ["gpu", "cpu"], "gpu": "NVIDIA H100" | null, "wait": 10, "version": "..."}``:
  200 with one job and its lease, or 204 after waiting up to ``wait`` seconds (a long-poll).
- ``POST /jobs/<id>/heartbeat`` ``{"lease_id"}``: 200 with the lease's new length; 409 once it is lost
  (``reason``: ``cancelled``, ``lease_expired``, ``finished``).
- ``POST /jobs/<id>/result`` ``{"lease_id", "verdict", "judged_on"}``: 200 ``{"stored": true}``; a repeat with
  the same lease: 200 ``{"stored": false}``; a stale lease: 409. The verdict is checked first
  (``web/results.py``): against the schema, and against the job (its exercise, run and mode); a 400 names the
  field (``error.field``, e.g. ``verdict.tests[3].ms``, ``verdict.exercise``) and changes nothing, so the lease
  still holds: the runner may post a corrected result, or release the job (``failed``).
- ``POST /jobs/<id>/release`` ``{"lease_id", "reason": "stopping"|"failed", "message"}``: hand a job back
  unjudged; ``stopping`` costs no attempt, ``failed`` (the runner's sandbox broke) does.

A lease is bound to the runner that claimed it: another runner's token with that lease id gets 403
``not_your_lease`` on heartbeat, result and release, and nothing changes.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import Blueprint, Response, current_app, g, request
from sqlalchemy import update

from judge.modes import SUBMISSION_MODES

from .auth import require_runner
from .db import utcnow
from .errors import ApiError, json_object_or_empty
from .grading import Grading, ready_grading
from .models import Runner, Submission
from .queue import NOT_YOURS, LeaseLost
from .results import JobFacts, checked_verdict

bp = Blueprint("runners", __name__, url_prefix="/api/v1/runner")
MAX_RESULT_BYTES = 2**20  # a whole request; the judge caps each text at 4000 characters, web/results.py at 64 Ki


@bp.before_request
def _limit_body():
    request.max_content_length = MAX_RESULT_BYTES


def _lease(data: dict[str, Any]) -> str:
    lease = data.get("lease_id")
    if not isinstance(lease, str) or not 1 <= len(lease) <= 64 or not lease.isprintable():
        raise ApiError(400, "bad_lease", "'lease_id' (the claim's lease, a string of printable characters) is "
                       "required.")
    return lease


def _leased() -> tuple[Grading, dict[str, Any], str]:
    """A job request's grading service, body and lease id."""
    grading = ready_grading()
    data = json_object_or_empty()
    lease = _lease(data)
    return grading, data, lease


@contextmanager
def _on_lease(job_id: int, lost: str) -> Iterator[None]:
    """Around a queue call made with a lease: a lost lease is a 409 (``lost`` says so, with ``{reason}``), another
    runner's lease a 403; either way nothing was changed."""
    try:
        yield
    except LeaseLost as e:
        if e.reason == NOT_YOURS:
            raise ApiError(403, NOT_YOURS, f"Job {job_id} was claimed by another runner: this runner may not act "
                           "on its lease. Nothing was changed.") from None
        raise ApiError(409, "lease_lost", f"Job {job_id}: " + lost.format(reason=e.reason), reason=e.reason) from None


def _seen(grading: Grading, runner: Runner, modes: list[str] | None = None, gpu: str | None = None,
          version: str | None = None) -> None:
    """Remember that the runner is alive (at most every few seconds, unless what it said changed)."""
    now = utcnow()
    values: dict[str, Any] = {}
    if modes is not None and ",".join(modes) != runner.modes:
        values["modes"] = ",".join(modes)
    if modes is not None and gpu != runner.gpu:
        values["gpu"] = gpu
    if version is not None and version != runner.version:
        values["version"] = version
    if values or runner.last_seen_at is None or now - runner.last_seen_at > dt.timedelta(seconds=5):
        with grading.db.session() as s:
            s.execute(update(Runner).where(Runner.id == runner.id).values(last_seen_at=now, **values))


@bp.post("/claim")
@require_runner
def claim():
    grading = ready_grading()
    data = json_object_or_empty()
    modes = data.get("modes", ["gpu", "cpu"])
    if not isinstance(modes, list) or not modes or any(m not in SUBMISSION_MODES for m in modes):
        raise ApiError(400, "bad_modes", f"'modes' must be a non-empty list drawn from {list(SUBMISSION_MODES)}.")
    gpu = data.get("gpu")
    if gpu is not None and (not isinstance(gpu, str) or len(gpu) > 128 or not gpu.isprintable()):
        raise ApiError(400, "bad_gpu", "'gpu' must be the GPU's name (at most 128 printable characters) or null.")
    version = data.get("version", "")
    if not isinstance(version, str) or len(version) > 64 or not version.isprintable():
        raise ApiError(400, "bad_version", "'version' must be a string of at most 64 printable characters.")
    wait = data.get("wait", 0)
    if not isinstance(wait, int | float) or isinstance(wait, bool) or not 0 <= wait <= 3600:
        raise ApiError(400, "bad_wait", "'wait' must be a number of seconds (0 for no long-poll).")
    wait = min(float(wait), float(current_app.config["CLAIM_WAIT_MAX_SECONDS"]))
    runner = g.runner
    _seen(grading, runner, sorted(set(modes)), gpu, version)
    deadline = time.monotonic() + wait
    seen = grading.hub.version
    while True:
        grading.queue.reap_if_due()
        job = grading.queue.claim(runner.id, modes)
        if job is not None:
            return {"job": job.to_dict()}
        left = deadline - time.monotonic()
        if left <= 0:
            return Response(status=204)
        seen = grading.hub.wait(seen, min(left, 2.0))


@bp.post("/jobs/<rowid:job_id>/heartbeat")
@require_runner
def heartbeat(job_id: int):
    grading, _, lease = _leased()
    _seen(grading, g.runner)
    with _on_lease(job_id, "the lease is lost ({reason}); stop working on it."):
        seconds = grading.queue.heartbeat(job_id, lease, g.runner.id)
    return {"lease_seconds": seconds}


def _job_facts(grading: Grading, job_id: int) -> JobFacts | None:
    """The job's exercise, mode and run, that its verdict must agree with; None for a job the site does not have."""
    with grading.db.session() as s:
        sub = s.get(Submission, job_id)
        return None if sub is None else JobFacts(sub.id, sub.exercise, sub.mode, sub.run_only)


@bp.post("/jobs/<rowid:job_id>/result")
@require_runner
def result(job_id: int):
    grading, data, lease = _leased()
    verdict = checked_verdict(data.get("verdict"), job=_job_facts(grading, job_id))
    judged_on = data.get("judged_on")
    if judged_on is not None and (not isinstance(judged_on, dict) or len(json.dumps(judged_on)) > 4096):
        raise ApiError(400, "bad_judged_on", "'judged_on' must be a small object (runner, gpu, device).",
                       field="judged_on")
    judged_on = {**(judged_on or {}), "runner": g.runner.name}
    _seen(grading, g.runner)
    with _on_lease(job_id, "this lease is stale ({reason}); the result was not stored."):
        stored = grading.queue.store_result(job_id, lease, g.runner.id, verdict, judged_on)
    return {"stored": stored}


@bp.post("/jobs/<rowid:job_id>/release")
@require_runner
def release(job_id: int):
    grading, data, lease = _leased()
    reason = data.get("reason", "stopping")
    if reason not in ("stopping", "failed"):
        raise ApiError(400, "bad_reason", "'reason' must be 'stopping' (no attempt counted) or 'failed'.")
    message = data.get("message", "")
    if not isinstance(message, str):
        raise ApiError(400, "bad_message", "'message' must be a string.")
    with _on_lease(job_id, "the lease is lost ({reason})."):
        state = grading.queue.release(job_id, lease, g.runner.id, failed=reason == "failed")
    return {"released": True, "status": state}

"""The OpenAPI description of the learner's submissions API (``web/submissions.py``)."""

from __future__ import annotations

from typing import Any

from judge.modes import SUBMISSION_MODES

from ..models import TIMINGS
from .common import BEARER, errors_doc, ok_doc

_SID = {"name": "sub_id", "in": "path", "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}, "description": "The submission's id."}

PATHS: dict[str, Any] = {
    "/api/v1/submissions": {
        "post": {
            "operationId": "createSubmission", "security": BEARER,
            "summary": "Submit code for judging on the grading server (queued; a runner claims it).",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/NewSubmission"}}}},
            "responses": {**ok_doc(201, "Submission", "Queued: the submission, with its queue position."),
                          **errors_doc(400, 401, 403, 404, 413, 414, 415, 429, 503)},
        },
        "get": {
            "operationId": "listSubmissions", "security": BEARER,
            "summary": "Your submissions, newest first (staff: everyone's with all=1); without verdicts.",
            "parameters": [
                {"name": "limit", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                {"name": "exercise", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 128}},
                {"name": "all", "in": "query", "required": False, "schema": {"type": "string", "enum": ["1", "true"]}},
            ],
            "responses": {**ok_doc(200, "SubmissionList", "The submissions."), **errors_doc(400, 401, 414, 503)},
        },
    },
    "/api/v1/submissions/{sub_id}": {"get": {
        "operationId": "getSubmission", "security": BEARER, "parameters": [_SID],
        "summary": "A submission: its status (queued with position, running, done, cancelled) and verdict.",
        "responses": {**ok_doc(200, "Submission", "The submission."), **errors_doc(401, 404, 414, 503)},
    }},
    "/api/v1/submissions/{sub_id}/events": {"get": {
        "operationId": "watchSubmission", "security": BEARER, "parameters": [_SID],
        "summary": "Server-Sent Events: `queued` (with position), `running`, then `done` (with the verdict) or "
                   "`cancelled`; each event's data is the Submission. A `: heartbeat` comment every 15 s. "
                   "An account may have 8 streams open at once (429 `too_many_streams` past it; the site as a "
                   "whole: `streams_full`); a stream ends, with no event, within seconds of its token being "
                   "revoked, its session ended or its account disabled.",
        "responses": {"200": {"description": "An event stream that ends after done or cancelled.",
                              "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                      **errors_doc(401, 404, 414, 429, 503)},
    }},
    "/api/v1/submissions/{sub_id}/cancel": {"post": {
        "operationId": "cancelSubmission", "security": BEARER, "parameters": [_SID],
        "summary": "Cancel a queued or running submission.",
        "responses": {**ok_doc(200, "Submission", "Cancelled."), **errors_doc(401, 403, 404, 409, 414, 503)},
    }},
    "/api/v1/grading": {"get": {
        "operationId": "gradingStatus",
        "summary": "Whether this site judges on a grading server now: runners seen in the last 90 s, their GPUs.",
        "responses": {**ok_doc(200, "GradingStatus", "The grading server's state."), **errors_doc(414, 503)},
    }},
}

_TIME = {"type": ["string", "null"], "format": "date-time"}
SCHEMAS: dict[str, Any] = {
    "NewSubmission": {
        "type": "object", "additionalProperties": False, "required": ["exercise", "code"],
        "properties": {
            "exercise": {"type": "string", "minLength": 1, "description": "The exercise's id."},
            "code": {"type": "string", "description": "The submission's source (at most MAX_CODE_BYTES, UTF-8)."},
            "mode": {"type": "string", "enum": list(SUBMISSION_MODES), "default": "gpu",
                     "description": "gpu: CUDA graphs captured on a GPU (emulated on a runner without one); cpu."},
            "run": {"type": "boolean", "default": False, "description": "Only the visible test_example* tests."},
        },
    },
    "Submission": {
        "type": "object", "required": ["id", "exercise", "mode", "run", "status", "position", "result", "attempts",
                                       "created_at", "links"],
        "properties": {
            "id": {"type": "integer"}, "exercise": {"type": "string"},
            "mode": {"type": "string", "enum": list(SUBMISSION_MODES)}, "run": {"type": "boolean"},
            "status": {"type": "string", "enum": ["queued", "running", "done", "cancelled"]},
            "position": {"type": ["integer", "null"], "description": "1 = next to be claimed; null unless queued."},
            "result": {"type": ["string", "null"], "description": "The verdict's status once done."},
            "attempts": {"type": "integer", "description": "Claims so far (a lost runner's claim counts)."},
            "user": {"type": ["string", "null"]}, "runner": {"type": ["string", "null"]},
            "runner_label": {"type": ["string", "null"], "description": "The runner as the page names it: "
                             "\"this machine's runner\" (the embedded default's) or \"runner NAME\"."},
            "created_at": _TIME, "claimed_at": _TIME, "finished_at": _TIME,
            "judged_on": {"type": ["object", "null"], "description": "runner, device, gpu, emulated (no GPU: "
                          "CUDA graphs emulated on the CPU), note."},
            "verdict": {"type": ["object", "null"], "description": "The verdict (judge/verdict.schema.json)."},
            "timings": {"type": "array", "description": "A graded submission: what it was against each assignment "
                        "holding its exercise when it was made (on_time, late: in the late window, after).",
                        "items": {"type": "object", "required": ["assignment", "name", "timing"],
                                  "additionalProperties": False,
                                  "properties": {"assignment": {"type": "integer", "description": "Its id."},
                                                 "name": {"type": "string"},
                                                 "timing": {"type": "string", "enum": list(TIMINGS)}}}},
            "links": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    "SubmissionList": {
        "type": "object", "required": ["submissions"], "additionalProperties": False,
        "properties": {"submissions": {"type": "array", "items": {"$ref": "#/components/schemas/Submission"}}},
    },
    "GradingStatus": {
        "type": "object", "additionalProperties": False,
        "required": ["runners", "gpus", "modes", "intake_open", "queued", "logged_in", "login_url", "online"],
        "properties": {"runners": {"type": "integer"}, "gpus": {"type": "array", "items": {"type": "string"}},
                       "modes": {"type": "array", "items": {"type": "string"}}, "intake_open": {"type": "boolean"},
                       "queued": {"type": "integer"}, "logged_in": {"type": "boolean"},
                       "login_url": {"type": "string"},
                       "online": {"type": "array", "description": "The runners online, as the page names them.",
                                  "items": {"type": "object", "additionalProperties": False,
                                            "required": ["runner", "gpu", "modes"],
                                            "properties": {"runner": {"type": "string"},
                                                           "gpu": {"type": ["string", "null"]},
                                                           "modes": {"type": "array", "items": {"type": "string"}}}}}},
    },
}

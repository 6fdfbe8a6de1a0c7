"""The OpenAPI description of the runner API (``web/runners.py``)."""

from __future__ import annotations

from typing import Any

from judge.modes import SUBMISSION_MODES

from .common import errors_doc, ok_doc

_RUNNER = [{"runnerToken": []}]
_JOB = {"name": "job_id", "in": "path", "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}, "description": "The job's id."}
_R409 = {404: "A malformed job id.",
         403: "The lease is another runner's (error.code: not_your_lease): nothing was changed.",
         409: "The lease is lost (error.reason: cancelled, lease_expired, finished, unknown_job): stop working on it."}
_RESULT = {**_R409,
           400: "A malformed body, or a verdict outside judge/verdict.schema.json or the site's bounds "
                "(web/results.py); error.field names the field (e.g. verdict.tests[3].ms). Nothing was changed: "
                "the lease still holds.",
           413: "The body is over 1 MiB."}


def _body(ref: str) -> dict[str, Any]:
    return {"required": False, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


PATHS: dict[str, Any] = {
    "/api/v1/runner/claim": {"post": {
        "operationId": "claimJob", "security": _RUNNER, "requestBody": _body("Claim"),
        "summary": "Claim the oldest queued job this runner can judge, with a lease; waits up to `wait` s.",
        "responses": {**ok_doc(200, "ClaimedJob", "A job and its lease."),
                      "204": {"description": "No job within the wait."}, **errors_doc(400, 401, 413, 414, 503)},
    }},
    "/api/v1/runner/jobs/{job_id}/heartbeat": {"post": {
        "operationId": "heartbeat", "security": _RUNNER, "parameters": [_JOB], "requestBody": _body("Lease"),
        "summary": "Extend the job's lease.",
        "responses": {"200": {"description": "The lease's new length.", "content": {"application/json": {
            "schema": {"type": "object", "properties": {"lease_seconds": {"type": "number"}}}}}},
            **errors_doc(400, 401, 403, 404, 409, 413, 414, 503, text=_R409)},
    }},
    "/api/v1/runner/jobs/{job_id}/result": {"post": {
        "operationId": "postResult", "security": _RUNNER, "parameters": [_JOB], "requestBody": _body("Result"),
        "summary": "Store the verdict, once: a repeat with the same lease answers stored=false.",
        "responses": {"200": {"description": "Stored now (true) or already (false).", "content": {"application/json": {
            "schema": {"type": "object", "properties": {"stored": {"type": "boolean"}}}}}},
            **errors_doc(400, 401, 403, 404, 409, 413, 414, 503, text=_RESULT)},
    }},
    "/api/v1/runner/jobs/{job_id}/release": {"post": {
        "operationId": "releaseJob", "security": _RUNNER, "parameters": [_JOB], "requestBody": _body("Release"),
        "summary": "Hand a job back unjudged: stopping (no attempt counted) or failed (the runner's sandbox broke).",
        "responses": {"200": {"description": "Back in the queue (or ended, after the last attempt).",
                              "content": {"application/json": {"schema": {"type": "object"}}}},
                      **errors_doc(400, 401, 403, 404, 409, 413, 414, 503, text=_R409)},
    }},
}

SCHEMAS: dict[str, Any] = {
    "Claim": {"type": "object", "properties": {
        "modes": {"type": "array", "items": {"type": "string", "enum": list(SUBMISSION_MODES)}, "minItems": 1},
        "gpu": {"type": ["string", "null"], "maxLength": 128}, "wait": {"type": "number", "minimum": 0},
        "version": {"type": "string", "maxLength": 64}}},
    "ClaimedJob": {"type": "object", "required": ["job"], "properties": {"job": {
        "type": "object", "required": ["id", "lease_id", "lease_seconds", "exercise", "mode", "run", "code", "attempt"],
        "properties": {"id": {"type": "integer"}, "lease_id": {"type": "string"}, "lease_seconds": {"type": "number"},
                       "exercise": {"type": "string"}, "mode": {"type": "string"}, "run": {"type": "boolean"},
                       "code": {"type": "string"}, "attempt": {"type": "integer"}}}}},
    "Lease": {"type": "object", "required": ["lease_id"],
              "properties": {"lease_id": {"type": "string", "minLength": 1, "maxLength": 64}}},
    "Result": {"type": "object", "required": ["lease_id", "verdict"], "properties": {
        "lease_id": {"type": "string", "minLength": 1, "maxLength": 64},
        "verdict": {"type": "object", "description": "judge/verdict.schema.json"},
        "judged_on": {"type": "object"}}},
    "Release": {"type": "object", "required": ["lease_id"], "properties": {
        "lease_id": {"type": "string", "minLength": 1, "maxLength": 64},
        "reason": {"type": "string", "enum": ["stopping", "failed"]}, "message": {"type": "string"}}},
}

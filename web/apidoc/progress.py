"""The OpenAPI description of a learner's progress and saved code on the server (``web/progress.py``)."""

from __future__ import annotations

from typing import Any

from judge.exercise import SLUG_RE

from ..api import MAX_ID
from .common import BEARER, errors_doc, ok_doc

_EX = {"name": "exercise", "in": "path", "required": True,
       "schema": {"type": "string", "pattern": SLUG_RE.pattern, "maxLength": MAX_ID},
       "description": "The exercise's slug, e.g. graph-capture-buffer."}
_WORDS = {400: "A malformed exercise id or body (the message says which field).",
          404: "No such exercise (not_found), or no code saved for it (no_workspace).",
          403: "Logged in with the session cookie, but the X-CSRF-Token header is missing or wrong."}

PATHS: dict[str, Any] = {
    "/api/v1/progress": {"get": {
        "operationId": "getProgress", "security": BEARER,
        "summary": "Your grading-server verdicts per exercise: solved (a graded submission was accepted) or "
                   "tried, attempts, the first accepted time and the best submission. Run-only submissions, and "
                   "those not done, do not count.",
        "responses": {**ok_doc(200, "Progress", "Your progress on the server."), **errors_doc(401, 414, 503)},
    }},
    "/api/v1/workspaces": {"get": {
        "operationId": "listWorkspaces", "security": BEARER,
        "summary": "The exercises you saved code for on the server (without the code).",
        "responses": {**ok_doc(200, "WorkspaceList", "Your saved code, by exercise."), **errors_doc(401, 414, 503)},
    }},
    "/api/v1/workspaces/{exercise}": {
        "get": {
            "operationId": "getWorkspace", "security": BEARER, "parameters": [_EX],
            "summary": "Your code saved on the server for one exercise.",
            "responses": {**ok_doc(200, "Workspace", "The saved code."),
                          **errors_doc(400, 401, 404, 414, 503, text=_WORDS)},
        },
        "put": {
            "operationId": "saveWorkspace", "security": BEARER, "parameters": [_EX],
            "summary": "Save your code for one exercise (it replaces what was saved). At most MAX_CODE_BYTES.",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/WorkspaceSave"}}}},
            "responses": {**ok_doc(200, "WorkspaceSummary", "Saved."),
                          **errors_doc(400, 401, 403, 404, 413, 414, 415, 503, text=_WORDS)},
        },
        "delete": {
            "operationId": "deleteWorkspace", "security": BEARER, "parameters": [_EX],
            "summary": "Forget your saved code for one exercise (204 whether or not there was any).",
            "responses": {"204": {"description": "Nothing is saved for it now."},
                          **errors_doc(400, 401, 403, 404, 414, 503, text=_WORDS)},
        },
    },
}

_TIME = {"type": ["string", "null"], "format": "date-time"}
_SUMMARY = {"exercise": {"type": "string"}, "saved_at": {"type": "string", "format": "date-time"},
            "size": {"type": "integer", "description": "The code's size in UTF-8 bytes."}}
SCHEMAS: dict[str, Any] = {
    "Progress": {
        "type": "object", "required": ["exercises"], "additionalProperties": False,
        "properties": {"exercises": {"type": "object", "description": "By exercise id; only those with a "
                                     "graded submission judged.",
                                     "additionalProperties": {"$ref": "#/components/schemas/ExerciseProgress"}}},
    },
    "ExerciseProgress": {
        "type": "object", "additionalProperties": False,
        "required": ["status", "attempts", "first_accepted_at", "last_at", "best"],
        "properties": {
            "status": {"type": "string", "enum": ["solved", "tried"]},
            "attempts": {"type": "integer", "minimum": 1, "description": "Graded submissions judged."},
            "first_accepted_at": _TIME, "last_at": _TIME,
            "best": {"type": "object", "additionalProperties": False,
                     "required": ["submission", "result", "passed", "finished_at"],
                     "description": "Accepted if one was, else the one with the most tests passed (the latest).",
                     "properties": {"submission": {"type": "integer"}, "result": {"type": ["string", "null"]},
                                    "passed": {"type": "integer"}, "finished_at": _TIME}},
        },
    },
    "WorkspaceSave": {
        "type": "object", "additionalProperties": False, "required": ["code"],
        "properties": {"code": {"type": "string", "description": "The code (at most MAX_CODE_BYTES, UTF-8)."}},
    },
    "WorkspaceSummary": {"type": "object", "additionalProperties": False, "required": list(_SUMMARY),
                         "properties": _SUMMARY},
    "Workspace": {"type": "object", "additionalProperties": False, "required": [*_SUMMARY, "code"],
                  "properties": {**_SUMMARY, "code": {"type": "string"}}},
    "WorkspaceList": {
        "type": "object", "required": ["workspaces"], "additionalProperties": False,
        "properties": {"workspaces": {"type": "array", "items": {"$ref": "#/components/schemas/WorkspaceSummary"}}},
    },
}

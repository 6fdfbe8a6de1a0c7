"""The OpenAPI description of the assignments API (``web/assignments.py``)."""

from __future__ import annotations

from typing import Any

from ..models import TIMINGS
from .common import BEARER, errors_doc, ok_doc

_AID = {"name": "assignment_id", "in": "path", "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}, "description": "The assignment's id."}
_USER = {"name": "username", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64},
         "description": "The learner's username."}
_TEXT = {
    400: "A malformed body: the message says what, `field` which field (bad_time, bad_dates: due_at not after "
         "opens_at or late_until not after due_at, unknown_exercise naming them, missing_field, unknown_field).",
    403: "A learner asking for a staff operation, or a session cookie without its X-CSRF-Token header.",
    404: "No such assignment (a learner: none that is open), no such user, or no extension to remove.",
    409: "Another assignment has that name.",
}
_NO_BODY = {"204": {"description": "Done; no body."}}


def _err(*codes: int) -> dict[str, Any]:
    return errors_doc(*codes, text=_TEXT)


PATHS: dict[str, Any] = {
    "/api/v1/assignments": {
        "get": {
            "operationId": "listAssignments", "security": BEARER,
            "summary": "A learner: the open assignments (opens_at <= now), each with its exercises, your own window "
                       "(an extension moves the due time and the late window) and per exercise your status. Staff: "
                       "every assignment with its extensions.",
            "responses": {**ok_doc(200, "AssignmentList", "The assignments, by due time."), **_err(401, 414, 503)},
        },
        "post": {
            "operationId": "createAssignment", "security": BEARER,
            "summary": "Staff: create an assignment.",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/NewAssignment"}}}},
            "responses": {**ok_doc(201, "Assignment", "Created."), **_err(400, 401, 403, 409, 414, 415, 503)},
        },
    },
    "/api/v1/assignments/{assignment_id}": {
        "get": {
            "operationId": "getAssignment", "security": BEARER, "parameters": [_AID],
            "summary": "One assignment (a learner: an open one, as in the list; staff: any, with its extensions).",
            "responses": {**ok_doc(200, "Assignment", "The assignment."), **_err(401, 404, 414, 503)},
        },
        "patch": {
            "operationId": "editAssignment", "security": BEARER, "parameters": [_AID],
            "summary": "Staff: change some of an assignment's fields (late_until null removes the late window).",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/AssignmentChange"}}}},
            "responses": {**ok_doc(200, "Assignment", "Changed."), **_err(400, 401, 403, 404, 409, 414, 415, 503)},
        },
        "delete": {
            "operationId": "deleteAssignment", "security": BEARER, "parameters": [_AID],
            "summary": "Staff: delete an assignment, its extensions and the timings recorded against it.",
            "responses": {**_NO_BODY, **_err(401, 403, 404, 414, 503)},
        },
    },
    "/api/v1/assignments/{assignment_id}/extensions/{username}": {
        "put": {
            "operationId": "extendAssignment", "security": BEARER, "parameters": [_AID, _USER],
            "summary": "Staff: give a learner their own due time (after the assignment opens); the late window "
                       "keeps its length and moves with it.",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False, "required": ["due_at"],
                "properties": {"due_at": {"type": "string", "format": "date-time"}}}}}},
            "responses": {**ok_doc(200, "Assignment", "The assignment with its extensions."),
                          **_err(400, 401, 403, 404, 414, 415, 503)},
        },
        "delete": {
            "operationId": "removeExtension", "security": BEARER, "parameters": [_AID, _USER],
            "summary": "Staff: remove a learner's extension.",
            "responses": {**_NO_BODY, **_err(401, 403, 404, 414, 503)},
        },
    },
}

_TIME = {"type": "string", "format": "date-time", "description": "ISO 8601 UTC with Z (input: Z or an offset)."}
_TIME_OR_NULL = {"type": ["string", "null"], "format": "date-time"}
_FIELDS = {
    "name": {"type": "string", "minLength": 1, "maxLength": 128},
    "exercises": {"type": "array", "minItems": 1, "items": {"type": "string"},
                  "description": "Exercise ids from the catalog, in order."},
    "opens_at": _TIME, "due_at": _TIME,
    "late_until": {**_TIME_OR_NULL, "description": "Late submissions until then (after due_at); null: none."},
}
SCHEMAS: dict[str, Any] = {
    "NewAssignment": {"type": "object", "additionalProperties": False,
                      "required": ["name", "exercises", "opens_at", "due_at"], "properties": _FIELDS},
    "AssignmentChange": {"type": "object", "additionalProperties": False, "properties": _FIELDS},
    "Assignment": {
        "type": "object", "required": ["id", "name", "exercises", "opens_at", "due_at", "late_until"],
        "description": "Staff see created_by, updated_at and extensions, and exercises as ids; a learner sees "
                       "window, accepted, and exercises with their status.",
        "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"},
            "opens_at": _TIME, "due_at": _TIME, "late_until": _TIME_OR_NULL,
            "exercises": {"type": "array", "items": {"oneOf": [
                {"type": "string"},
                {"type": "object", "required": ["exercise", "status", "timing"], "additionalProperties": False,
                 "properties": {"exercise": {"type": "string"},
                                "status": {"type": "string", "enum": ["accepted", "tried", "not_tried"]},
                                "timing": {"type": ["string", "null"], "enum": [*TIMINGS, None],
                                           "description": "An accepted one's best timing."}}}]}},
            "window": {"type": "object", "required": ["opens_at", "due_at", "late_until", "extended"],
                       "additionalProperties": False,
                       "properties": {"opens_at": _TIME, "due_at": _TIME, "late_until": _TIME_OR_NULL,
                                      "extended": {"type": "boolean"}}},
            "accepted": {"type": "integer", "description": "How many of its exercises you have accepted."},
            "created_by": {"type": "string"}, "updated_at": _TIME,
            "extensions": {"type": "array", "items": {
                "type": "object", "required": ["username", "due_at", "late_until", "granted_by"],
                "additionalProperties": False,
                "properties": {"username": {"type": "string"}, "due_at": _TIME, "late_until": _TIME_OR_NULL,
                               "granted_by": {"type": "string"}}}},
        },
    },
    "AssignmentList": {
        "type": "object", "required": ["assignments"], "additionalProperties": False,
        "properties": {"assignments": {"type": "array", "items": {"$ref": "#/components/schemas/Assignment"}}},
    },
}

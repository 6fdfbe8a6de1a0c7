"""The OpenAPI description of the staff's gradebook (``web/gradebook_views.py``; the computation:
``web/gradebook.py``; the CSV's columns: ``web/gradebook_export.py``)."""

from __future__ import annotations

from typing import Any

from .common import BEARER, errors_doc, ok_doc

_PARAMS = [
    {"name": "assignment", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1,
                                                                        "maximum": 2**31 - 1},
     "description": "An assignment's id: its exercises are the columns, and timings are against it."},
    {"name": "chapter", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 64},
     "description": "A chapter's id (GET /api/v1/exercises): only its exercises."},
    {"name": "group", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 64},
     "description": "Only the learners of this group (`flask --app web users group`)."},
]
_TEXT = {
    401: "No login and no valid `Authorization: Bearer <token>`.",
    403: "Logged in, but not staff.",
    404: "No assignment or chapter with that id.",
    400: "A malformed parameter (the message names it), or one given twice.",
}
_ERRORS = errors_doc(400, 401, 403, 404, 414, 503, text=_TEXT)
_SUMMARY = ("Rows: the learners (not staff) by username; columns: the assignment's exercises, else the chapter's, "
            "else every exercise in course order. A cell counts the graded submissions (judged, not run-only): "
            "`result` is accepted if one was, else the newest one's; `accepted_at` when the first accepted one was "
            "submitted; `timing` what it was against the assignment (without one: the worst against any).")

PATHS: dict[str, Any] = {
    "/api/v1/gradebook": {"get": {
        "operationId": "gradebook", "security": BEARER, "parameters": _PARAMS,
        "summary": "Staff: every learner's standing on every exercise, and per assignment. " + _SUMMARY,
        "responses": {**ok_doc(200, "Gradebook", "The gradebook."), **_ERRORS},
    }},
    "/api/v1/gradebook.csv": {"get": {
        "operationId": "gradebookCsv", "security": BEARER, "parameters": _PARAMS,
        "summary": "Staff: the gradebook as CSV, one row per learner: username, group; per exercise `<slug>` (the "
                   "result), `<slug> attempts`, `<slug> accepted at` (ISO UTC), `<slug> timing`; per assignment "
                   "`<name> solved (of N)`, `<name> late`. The same values as the page's cells.",
        "responses": {"200": {"description": "The CSV (RFC 4180, CRLF line ends).",
                              "content": {"text/csv": {"schema": {"type": "string"}}}}, **_ERRORS},
    }},
}

_TIME = {"type": ["string", "null"], "format": "date-time"}
_CELL = {
    "type": "object", "additionalProperties": False, "required": ["result", "attempts", "accepted_at", "timing"],
    "properties": {
        "result": {"type": ["string", "null"], "description": "accepted, else the newest graded result; null: none"},
        "attempts": {"type": "integer", "minimum": 0, "description": "Graded submissions (done, not run-only)."},
        "accepted_at": {**_TIME, "description": "When the first accepted submission was made."},
        "timing": {"enum": ["on_time", "late", "after", None],
                   "description": "The first accepted submission against the assignment (null: against none)."},
    },
}
SCHEMAS: dict[str, Any] = {
    "Gradebook": {
        "type": "object", "additionalProperties": False, "required": ["filter", "exercises", "assignments", "learners"],
        "properties": {
            "filter": {"type": "object", "additionalProperties": False, "required": ["assignment", "chapter", "group"],
                       "properties": {"assignment": {"type": ["integer", "null"]}, "chapter": {"type": "string"},
                                      "group": {"type": "string"}}},
            "exercises": {"type": "array", "description": "The columns, in order.", "items": {
                "type": "object", "additionalProperties": False, "required": ["id", "title", "chapter"],
                "properties": {"id": {"type": "string"}, "title": {"type": "string"}, "chapter": {"type": "string"}}}},
            "assignments": {"type": "array", "description": "The summaries' assignments: the filtered one, else all.",
                            "items": {"type": "object", "additionalProperties": False,
                                      "required": ["id", "name", "exercises", "opens_at", "due_at", "late_until"],
                                      "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                                     "exercises": {"type": "array", "items": {"type": "string"}},
                                                     "opens_at": _TIME, "due_at": _TIME, "late_until": _TIME}}},
            "learners": {"type": "array", "items": {
                "type": "object", "additionalProperties": False,
                "required": ["username", "group", "cells", "assignments"],
                "properties": {
                    "username": {"type": "string"}, "group": {"type": "string"},
                    "cells": {"type": "object", "additionalProperties": _CELL, "description": "By exercise id."},
                    "assignments": {"type": "array", "items": {
                        "type": "object", "additionalProperties": False, "required": ["id", "solved", "total", "late"],
                        "properties": {"id": {"type": "integer"}, "solved": {"type": "integer"},
                                       "total": {"type": "integer"},
                                       "late": {"type": "integer", "description": "Of the solved: first accepted "
                                                "late or after."}}}},
                }}},
        },
    },
}

"""The OpenAPI description of the exercises API (``web/api.py``)."""

from __future__ import annotations

from typing import Any

from judge.exercise import DIFFICULTIES, SLUG_RE
from judge.modes import MODES

from ..api import MAX_ID, MAX_PARAM, VERSION

_ID = {"type": "string", "pattern": SLUG_RE.pattern, "maxLength": MAX_ID}
_ERR = {"$ref": "#/components/schemas/Error"}


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "A malformed id or parameter.", 404: "No such exercise.", 414: "The query string is too long.",
            503: "The exercises folder cannot be read (a course author's mistake; the message names the file)."}
    return {str(c): {"description": text[c], "content": {"application/json": {"schema": _ERR}}} for c in codes}


def _ok(ref: str, what: str) -> dict[str, Any]:
    return {"200": {"description": what,
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}}


_ID_PARAM = {"name": "exercise_id", "in": "path", "required": True, "schema": _ID,
             "description": "The exercise's slug, e.g. graph-capture-buffer."}


def _query(name: str, description: str, enum: Any = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": MAX_PARAM}
    if enum:
        schema["enum"] = ["", *enum]
    return {"name": name, "in": "query", "required": False, "schema": schema,
            "description": description + " Empty or left out: any."}


PATHS: dict[str, Any] = {
    "/api/v1/exercises": {"get": {
        "operationId": "listExercises",
        "summary": "The exercises in course order, optionally filtered; and the course's chapters.",
        "parameters": [
            _query("q", "Words that must all appear in the id, title, chapter, tags or targets."),
            {**_query("chapter", "A chapter id (exercises/chapters.toml); an unknown one matches nothing."),
             "schema": {"type": "string", "maxLength": MAX_ID, "pattern": f"^(|{SLUG_RE.pattern[1:-1]})$"}},
            _query("difficulty", "Difficulty.", DIFFICULTIES),
            _query("mode", "Where it can be judged.", MODES),
            _query("tag", "A tag; an unknown one matches nothing."),
        ],
        "responses": {**_ok("ExerciseList", "The exercises that match."), **_errors(400, 414, 503)},
    }},
    "/api/v1/exercises/{exercise_id}": {"get": {
        "operationId": "getExercise",
        "summary": "One exercise: statement, starter, visible tests, modes (never the reference solution).",
        "parameters": [_ID_PARAM],
        "responses": {**_ok("Exercise", "The exercise."), **_errors(400, 404, 414, 503)},
    }},
    "/api/v1/exercises/{exercise_id}/solution": {"get": {
        "operationId": "getSolution",
        "summary": "The reference solution (the engine's own code for the targets) and the explanation: spoilers.",
        "parameters": [_ID_PARAM],
        "responses": {**_ok("Solution", "The reference solution."), **_errors(400, 404, 414, 503)},
    }},
    "/api/v1/openapi.json": {"get": {
        "operationId": "getOpenApi",
        "summary": "This document.",
        "responses": {"200": {"description": "The OpenAPI 3.1 document.",
                              "content": {"application/json": {"schema": {"type": "object"}}}},
                      **_errors(414)},
    }},
}

_STR_LIST = {"type": "array", "items": {"type": "string"}}

_SUMMARY: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["id", "title", "chapter", "difficulty", "tags", "modes", "targets"],
    "properties": {
        "id": _ID, "title": {"type": "string"}, "chapter": _ID,
        "difficulty": {"enum": list(DIFFICULTIES)}, "tags": _STR_LIST,
        "modes": {"type": "array", "items": {"enum": list(MODES)}},
        "targets": {**_STR_LIST, "description": "The engine symbols the learner writes (module:Class.method)."},
    },
}

SCHEMAS: dict[str, Any] = {
    "Chapter": {
        "type": "object", "additionalProperties": False, "required": ["id", "number", "title", "covers"],
        "properties": {"id": _ID, "number": {"type": "integer", "minimum": 1}, "title": {"type": "string"},
                       "covers": {"type": "string"}},
    },
    "ExerciseSummary": _SUMMARY,
    "ExerciseList": {
        "type": "object", "additionalProperties": False, "required": ["version", "chapters", "exercises", "count"],
        "properties": {
            "version": {"const": VERSION},
            "chapters": {"type": "array", "items": {"$ref": "#/components/schemas/Chapter"}},
            "exercises": {"type": "array", "items": {"$ref": "#/components/schemas/ExerciseSummary"}},
            "count": {"type": "integer", "minimum": 0},
        },
    },
    "VisibleTest": {
        "type": "object", "additionalProperties": False, "required": ["name", "doc", "source", "line"],
        "properties": {"name": {"type": "string"}, "doc": {"type": "string"}, "source": {"type": "string"},
                       "line": {"type": "integer", "minimum": 1, "description": "Its first line in tests.py."}},
    },
    "Exercise": {
        "type": "object", "additionalProperties": False,
        "required": ["version", *_SUMMARY["required"], "chapter_title", "chapter_number", "time_limit",
                     "test_time_limit", "statement", "statement_html", "starter", "visible_tests", "test_count",
                     "prev", "next"],
        "properties": {
            "version": {"const": VERSION},
            **_SUMMARY["properties"],
            "chapter_title": {"type": "string"}, "chapter_number": {"type": "integer", "minimum": 1},
            "time_limit": {"type": "number"}, "test_time_limit": {"type": "number"},
            "statement": {"type": "string", "description": "Markdown."},
            "statement_html": {"type": "string", "description": (
                "The statement rendered as the site shows it, code highlighted; a closing paragraph naming the "
                "`practice/judge.py` commands says Run and Submit instead.")},
            "starter": {"type": "string", "description": "The starter file: the targets' signatures."},
            "visible_tests": {"type": "array", "items": {"$ref": "#/components/schemas/VisibleTest"}},
            "test_count": {"type": "object", "additionalProperties": False, "required": ["visible", "hidden"],
                           "properties": {"visible": {"type": "integer"}, "hidden": {"type": "integer"}}},
            "prev": {"type": ["string", "null"]}, "next": {"type": ["string", "null"]},
        },
    },
    "Solution": {
        "type": "object", "additionalProperties": False,
        "required": ["version", "id", "solution", "explanation", "explanation_html"],
        "properties": {"version": {"const": VERSION}, "id": _ID, "solution": {"type": "string"},
                       "explanation": {"type": "string"}, "explanation_html": {"type": "string"}},
    },
}

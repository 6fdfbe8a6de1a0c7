"""The JSON API under ``/api/v1`` that the pages use too: the exercises, one exercise, its reference solution.

Each view's OpenAPI description sits in ``PATHS`` / ``SCHEMAS`` below it; ``web/openapi.py`` gathers them
(with other modules' fragments) into ``/api/v1/openapi.json``.
"""

from __future__ import annotations

import functools
from typing import Any

from flask import Blueprint, current_app, jsonify, request

from judge.exercise import DIFFICULTIES, SLUG_RE
from judge.verdict import MODES

from .catalog import Catalog, Entry, Filters
from .errors import ApiError
from .rendering import markdown_html

VERSION = 1
MAX_ID = 64
MAX_PARAM = 200

bp = Blueprint("api", __name__, url_prefix="/api/v1")


def catalog() -> Catalog:
    return current_app.extensions["minisgl.catalog"].get()


def entry_for(exercise_id: str) -> Entry:
    if len(exercise_id) > MAX_ID or not SLUG_RE.match(exercise_id):
        raise ApiError(400, "invalid_id", f"exercise ids are slugs of at most {MAX_ID} characters "
                       "(lowercase letters, digits and single '-'), e.g. graph-capture-buffer")
    entry = catalog().by_slug.get(exercise_id)
    if entry is None:
        raise ApiError(404, "not_found", f"no exercise {exercise_id!r}")
    return entry


def _param(name: str, choices: tuple[str, ...] | None = None, slug: bool = False) -> str:
    values = request.args.getlist(name)
    if len(values) > 1:
        raise ApiError(400, "invalid_parameter", f"'{name}' is given {len(values)} times; give it once")
    value = values[0].strip() if values else ""
    if len(value) > MAX_PARAM:
        raise ApiError(400, "invalid_parameter", f"'{name}' is {len(value)} characters long; at most {MAX_PARAM}")
    if value and slug and (len(value) > MAX_ID or not SLUG_RE.match(value)):
        raise ApiError(400, "invalid_parameter", f"'{name}' must be an id like cuda-graph; got {value!r}")
    if value and choices is not None and value not in choices:
        raise ApiError(400, "invalid_parameter", f"'{name}' must be one of {', '.join(choices)}; got {value!r}")
    return value


def filters_from_request() -> Filters:
    """The list's filters from the query string; a bad value is an ApiError (400) naming the parameter."""
    return Filters(
        q=_param("q"), chapter=_param("chapter", slug=True),
        difficulty=_param("difficulty", DIFFICULTIES), mode=_param("mode", MODES), tag=_param("tag"),
    )


@bp.get("/exercises")
def exercises():
    cat = catalog()
    found = cat.filter(filters_from_request())
    return jsonify({
        "version": VERSION,
        "chapters": [
            {"id": c.id, "number": c.number, "title": c.title, "covers": c.covers} for c in cat.chapters
        ],
        "exercises": [en.summary() for en in found],
        "count": len(found),
    })


@bp.get("/exercises/<exercise_id>")
def exercise(exercise_id: str):
    return jsonify({"version": VERSION, **entry_for(exercise_id).detail()})


@functools.lru_cache(maxsize=64)
def _solution(slug: str, path: str, signature: tuple) -> tuple[str, str]:
    from judge.reference import reference_source  # imports the engine (torch): only when a solution is asked for

    entry = current_app.extensions["minisgl.catalog"].get().by_slug[slug]
    return reference_source(entry.exercise), entry.exercise.explanation


@bp.get("/exercises/<exercise_id>/solution")
def solution(exercise_id: str):
    entry = entry_for(exercise_id)
    cache = current_app.extensions["minisgl.catalog"]
    source, explanation = _solution(entry.slug, str(entry.exercise.path), cache.signature)
    return jsonify({
        "version": VERSION, "id": entry.slug, "solution": source,
        "explanation": explanation, "explanation_html": markdown_html(explanation),
    })


@bp.get("/openapi.json")
def openapi():
    from .openapi import document

    return jsonify(document())


# ---- the OpenAPI description of the views above --------------------------------------------------

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
            "statement_html": {"type": "string", "description": "The statement rendered, code highlighted."},
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

"""The JSON API under ``/api/v1`` that the pages use too: the exercises, one exercise, its reference solution.

Their OpenAPI description is ``web/apidoc/exercises.py``; ``web/openapi.py`` serves the document.
"""

from __future__ import annotations

import functools

from flask import Blueprint, current_app, jsonify, request

from judge.exercise import DIFFICULTIES, SLUG_RE
from judge.modes import MODES

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
    value = values[0].strip(" ") if values else ""  # only spaces: a control character is not an empty filter
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
    from judge.solution import reference_source  # imports the engine (torch): only when a solution is asked for

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

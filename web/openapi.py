"""The OpenAPI 3.1 document and its route, ``/api/v1/openapi.json``, gathered from ``web/apidoc/``.

Each area's description is a module there, with ``PATHS`` (OpenAPI path items keyed by the full path) and
``SCHEMAS`` (components). To add endpoints, add the area's module to ``SOURCES``;
``tests/site/test_api.py`` checks that the document and the app's ``/api/`` routes agree.
"""

from __future__ import annotations

import copy
from typing import Any

from flask import Blueprint, jsonify

from .api import VERSION
from .apidoc import accounts, assignments, exercises, gradebook, progress, runners, similarity, submissions
from .errors import ERROR_SCHEMA

SOURCES = [exercises, submissions, runners, accounts, progress, assignments, gradebook,  # with PATHS and SCHEMAS
           similarity]
bp = Blueprint("openapi", __name__, url_prefix="/api/v1")


def document() -> dict[str, Any]:
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "minisgl practice",
            "version": str(VERSION),
            "description": "The practice site's JSON API: exercises, their statements and starters, the reference "
                           "solutions; the grading server's submissions (learners) and jobs (runners). Errors are "
                           "JSON (`Error`) with a status code that fits.",
        },
        "paths": {},
        "components": {"schemas": {"Error": ERROR_SCHEMA}, "securitySchemes": {
            "bearerAuth": {"type": "http", "scheme": "bearer", "description": "A learner's API token (msu_...)."},
            "sessionCookie": {"type": "apiKey", "in": "cookie", "name": "practice_session",
                              "description": "The site's login; changes also need the X-CSRF-Token header."},
            "runnerToken": {"type": "http", "scheme": "bearer", "description": "A runner's token (msr_...)."},
        }},
    }
    for module in SOURCES:
        for path, item in module.PATHS.items():
            if path in doc["paths"]:
                raise ValueError(f"OpenAPI path {path} is described by two modules")
            doc["paths"][path] = item
        doc["components"]["schemas"].update(module.SCHEMAS)
    return copy.deepcopy(doc)


@bp.get("/openapi.json")
def openapi():
    return jsonify(document())

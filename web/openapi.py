"""The OpenAPI 3.1 document at ``/api/v1/openapi.json``, gathered from the modules that serve the API.

Each module keeps the description of its own views beside them, as ``PATHS`` (OpenAPI path items keyed by
the full path) and ``SCHEMAS`` (components). To add endpoints, add the module to ``SOURCES``;
``tests/site/test_api.py`` checks that the document and the app's ``/api/`` routes agree.
"""

from __future__ import annotations

import copy
from typing import Any

from . import accounts, api, runners, submissions
from .errors import ERROR_SCHEMA

SOURCES = [api, submissions, runners, accounts]  # modules with PATHS and SCHEMAS


def document() -> dict[str, Any]:
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "minisgl practice",
            "version": str(api.VERSION),
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

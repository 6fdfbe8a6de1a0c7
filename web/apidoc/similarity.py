"""The OpenAPI description of the staff's similarity report (``web/similarity_api.py``)."""

from __future__ import annotations

from typing import Any

from .common import BEARER, errors_doc, ok_doc

PATHS: dict[str, Any] = {
    "/api/v1/similarity": {"get": {
        "operationId": "similarityReport", "security": BEARER,
        "summary": "Staff only: pairs of accepted submissions by different learners of one exercise that are much "
                   "alike, or a submission much like the exercise's reference solution; by exercise, then score "
                   "(highest first). Computed in the background, once per new accepted submission.",
        "parameters": [
            {"name": "exercise", "in": "query", "required": False,
             "schema": {"type": "string", "maxLength": 64}, "description": "Only this exercise's pairs."},
            {"name": "limit", "in": "query", "required": False,
             "schema": {"type": "integer", "minimum": 1, "maximum": 500, "default": 200},
             "description": "At most this many pairs of each exercise (its highest)."},
        ],
        "responses": {**ok_doc(200, "SimilarityReport", "The pairs."),
                      **errors_doc(400, 401, 403, 414, 503,
                                   text={403: "Not staff (or a session cookie without its X-CSRF-Token)."})},
    }},
}

_SIDE = {
    "type": "object", "required": ["id", "user", "created_at"],
    "properties": {"id": {"type": "integer"}, "user": {"type": ["string", "null"]},
                   "created_at": {"type": ["string", "null"], "format": "date-time"}},
}
SCHEMAS: dict[str, Any] = {
    "SimilarityReport": {
        "type": "object", "required": ["threshold", "compared", "waiting", "pairs"],
        "properties": {
            "threshold": {"type": "number", "description": "The lowest score stored."},
            "compared": {"type": "integer", "description": "Accepted submissions compared so far."},
            "waiting": {"type": "integer", "description": "Accepted submissions not compared yet."},
            "pairs": {"type": "array", "items": {"$ref": "#/components/schemas/SimilarityPair"}},
        },
    },
    "SimilarityPair": {
        "type": "object",
        "required": ["id", "exercise", "score", "submission", "other", "computed_at", "link"],
        "properties": {
            "id": {"type": "integer"}, "exercise": {"type": "string"},
            "score": {"type": "number", "minimum": 0, "maximum": 1,
                      "description": "1: the same code up to names, layout and comments."},
            "submission": _SIDE,
            "other": {"oneOf": [_SIDE, {"type": "null"}],
                      "description": "The other learner's submission; null: the exercise's reference solution."},
            "computed_at": {"type": "string", "format": "date-time"},
            "link": {"type": "string", "description": "The staff page showing the two codes side by side."},
        },
    },
}

"""What the areas' OpenAPI descriptions share: the error responses, a JSON response, the learner's security."""

from __future__ import annotations

from typing import Any

_ERR = {"$ref": "#/components/schemas/Error"}
_ERROR_TEXT = {
    400: "A malformed body or parameter (the message says which field).",
    401: "No login and no valid `Authorization: Bearer <token>`.",
    403: "Logged in with the session cookie, but the X-CSRF-Token header is missing or wrong.",
    404: "No such submission (or another learner's), or no such exercise.",
    409: "The submission has finished already.",
    413: "The code is over the size limit (MAX_CODE_BYTES).",
    414: "The query string is too long.",
    415: "The body is not JSON.",
    429: "Over the per-user rate limit (rate_limited), too many of your submissions waiting (too_many_queued, "
         "MAX_QUEUED_PER_USER), or the queue is full (queue_full): wait Retry-After seconds.",
    503: "Intake is paused, the database is away or not migrated: wait Retry-After seconds.",
}
BEARER = [{"bearerAuth": []}, {"sessionCookie": []}]


def errors_doc(*codes: int, text: dict[int, str] | None = None) -> dict[str, Any]:
    words = {**_ERROR_TEXT, **(text or {})}
    return {str(c): {"description": words[c], "content": {"application/json": {"schema": _ERR}}} for c in codes}


def ok_doc(status: int, ref: str, what: str) -> dict[str, Any]:
    return {str(status): {"description": what,
                          "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}}

"""Errors: JSON under ``/api/``, a plain HTML page elsewhere, with the status code that fits; never a bare 500.

JSON errors have one shape, ``{"error": {"status": 429, "code": "rate_limited", "message": "...", "retry_after": 12}}``
(``ERROR_SCHEMA`` in the OpenAPI document). ``ApiError`` may add a ``Retry-After`` header (429, 503; also repeated
as ``retry_after``) and extra fields (a runner's lost lease: ``reason``; the wrong field of a body: ``field``); a
JSON 401 carries ``WWW-Authenticate``. JSON bodies are parsed here (``json_object``), strictly: no NaN or Infinity.
A database that is away answers 503 with ``Retry-After`` on every path, and the site recovers by itself.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from flask import Flask, jsonify, make_response, render_template, request
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException, InternalServerError, RequestURITooLarge

log = logging.getLogger(__name__)

API_PREFIX = "/api/"

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["status", "code", "message"],
            "additionalProperties": False,
            "properties": {
                "status": {"type": "integer", "description": "The HTTP status code, repeated."},
                "code": {"type": "string", "description": "A stable machine-readable name, e.g. not_found."},
                "message": {"type": "string", "description": "What went wrong, for a person."},
                "retry_after": {"type": "integer", "description": "Seconds to wait before trying again (429, 503; "
                                "also the Retry-After header)."},
                "reason": {"type": "string", "description": "Runner API, 409: why the lease is lost (cancelled, "
                           "lease_expired, finished, unknown_job)."},
                "login_url": {"type": "string", "description": "Where to log in (401 from /api/v1/me)."},
                "field": {"type": "string", "description": "400: the field of the body that is wrong, as a path "
                          "(e.g. verdict.tests[3].ms)."},
            },
        }
    },
}


class ApiError(Exception):
    """Raised by a view: answered as an error with this status, code and message (and ``retry_after``, extras)."""

    def __init__(self, status: int, code: str, message: str, *, retry_after: int | None = None, **extra):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.retry_after, self.extra = retry_after, extra


class NotFinite:
    """Where the body had ``NaN``, ``Infinity``, ``-Infinity`` or a number too large for a double (``1e999``):
    Python's json reads them as floats that are not JSON and that no later ``json.dumps`` could write back as
    JSON, so the parse keeps the literal instead and ``json_object`` refuses the body naming the field."""

    def __init__(self, literal: str):
        self.literal = literal


def _float(literal: str) -> float | NotFinite:
    value = float(literal)
    return value if math.isfinite(value) else NotFinite(literal)


def field_path(path: tuple[str | int, ...] | list[str | int]) -> str:
    """``("verdict", "tests", 3, "ms")`` -> ``verdict.tests[3].ms``: how an error names a field of the body."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the body)"


def _not_finite(data: Any) -> tuple[str, str] | None:
    """The first number that is not finite in ``data``: (its field path, its literal), or None. Iterative: a
    body nested as deep as the parser allows does not overflow the stack here either."""
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while todo:
        value, path = todo.pop()
        if isinstance(value, NotFinite):
            return field_path(path), value.literal
        if isinstance(value, dict):
            todo.extend((v, (*path, str(k))) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            todo.extend((v, (*path, i)) for i, v in reversed(list(enumerate(value))))
    return None


def json_object() -> dict:
    """The request's JSON object body; a clear 4xx for anything else (deep nesting included). Numbers must be
    finite: ``NaN``, ``Infinity`` and ``1e999`` are refused with a 400 that names the field."""
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "Send JSON (Content-Type: application/json).")
    raw = request.get_data(cache=True)  # over the route's max_content_length: 413 here, before any parsing
    try:
        data = json.loads(raw, parse_constant=NotFinite, parse_float=_float)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_json", "The body must be a JSON object.")
    bad = _not_finite(data)
    if bad is not None:
        field, literal = bad
        raise ApiError(400, "bad_number", f"{field}: {literal[:40]} is not a finite number (NaN, Infinity and "
                       "numbers beyond a double's range are not JSON numbers).", field=field)
    return data


def json_object_or_empty() -> dict:
    """Like ``json_object``, but an empty body is ``{}``."""
    return json_object() if request.content_length else {}


def _code(e: HTTPException) -> str:
    return (e.name or "error").lower().replace(" ", "_").replace("'", "")


def wants_json() -> bool:
    return request.path.startswith(API_PREFIX)


def error_response(status: int, code: str, message: str, headers=None, *, retry_after: int | None = None, **extra):
    headers = dict(headers or {})
    if retry_after is not None:
        headers["Retry-After"] = str(int(retry_after))
    if wants_json():
        body = {"status": status, "code": code, "message": message, **extra}
        if retry_after is not None:
            body["retry_after"] = int(retry_after)
        resp = jsonify({"error": body})
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="minisgl-practice"'
    else:
        resp = make_response(render_template("error.html", status=status, message=message))
    resp.status_code = status
    for k, v in headers.items():
        resp.headers[k] = v
    return resp


def register_errors(app: Flask) -> None:
    @app.before_request
    def refuse_huge_query():
        if len(request.query_string) > app.config["MAX_QUERY_BYTES"]:
            raise RequestURITooLarge(f"the query string is {len(request.query_string)} bytes; "
                                     f"at most {app.config['MAX_QUERY_BYTES']} are accepted")

    @app.errorhandler(ApiError)
    def api_error(e: ApiError):
        return error_response(e.status, e.code, e.message, retry_after=e.retry_after, **e.extra)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException):
        headers = {}
        if e.code == 405 and e.valid_methods:
            headers["Allow"] = ", ".join(sorted(e.valid_methods))
        return error_response(e.code or 500, _code(e), e.description or e.name, headers)

    @app.errorhandler(OperationalError)
    @app.errorhandler(PoolTimeout)
    def database_away(e):
        log.warning("database unavailable: %s", str(e).splitlines()[0][:200])
        return error_response(503, "database_unavailable",
                              "The database is not reachable right now; try again in a few seconds.", retry_after=5)

    @app.errorhandler(DBAPIError)
    def database_error(e: DBAPIError):
        if e.connection_invalidated:
            return database_away(e)
        log.exception("database error on %s %s", request.method, request.path)
        return error_response(500, "internal_error", "The site failed (a database error); this is not your fault.")

    @app.errorhandler(Exception)
    def unexpected(e: Exception):
        # ours, never the visitor's: logged with its traceback, answered without it
        app.logger.exception("unhandled error on %s %s", request.method, request.path)
        if isinstance(e, InternalServerError) and e.original_exception is not None:
            e = e.original_exception
        return error_response(500, "internal_error", f"the site failed ({type(e).__name__}); this is not your fault")

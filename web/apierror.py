"""The grading server's JSON errors, in the site's one shape (``web/errors.py``):
``{"error": {"status": 429, "code": "rate_limited", "message": "...", "retry_after": 12}}``.

``ApiError`` here adds what the queue needs to the site's: a ``Retry-After`` header (429, 503; also repeated
as ``retry_after``), ``WWW-Authenticate`` on a 401, and a ``reason`` for a runner's lost lease (409). A
database that is away answers 503 with ``Retry-After`` on every path, and the site recovers by itself.
"""

from __future__ import annotations

import logging

from flask import Flask, jsonify, request
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from . import errors

log = logging.getLogger(__name__)


class ApiError(errors.ApiError):
    def __init__(self, status: int, code: str, message: str, *, retry_after: int | None = None, **extra):
        super().__init__(status, code, message)
        self.retry_after, self.extra = retry_after, extra


def json_object(*, required: bool = True) -> dict:
    """The request's JSON object body; a clear 4xx for anything else (deep nesting included).
    ``required=False``: an empty body is ``{}``."""
    if not request.content_length and not required:
        return {}
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "Send JSON (Content-Type: application/json).")
    try:
        data = request.get_json(silent=True)
    except RecursionError:
        data = None
    if not isinstance(data, dict):
        raise ApiError(400, "bad_json", "The body must be a JSON object.")
    return data


def error_response(status: int, code: str, message: str, *, retry_after: int | None = None, **extra):
    if not errors.wants_json():
        return errors.error_response(status, code, message,
                                     {"Retry-After": str(int(retry_after))} if retry_after is not None else None)
    body = {"status": status, "code": code, "message": message, **extra}
    if retry_after is not None:
        body["retry_after"] = int(retry_after)
    resp = jsonify({"error": body})
    resp.status_code = status
    if retry_after is not None:
        resp.headers["Retry-After"] = str(int(retry_after))
    if status == 401:
        resp.headers["WWW-Authenticate"] = 'Bearer realm="minisgl-practice"'
    return resp


def register_error_handlers(app: Flask) -> None:
    """After ``errors.register_errors`` (the site's): these are more specific, so they win for their errors."""

    @app.errorhandler(ApiError)
    def api_error(e: ApiError):
        return error_response(e.status, e.code, e.message, retry_after=e.retry_after, **e.extra)

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

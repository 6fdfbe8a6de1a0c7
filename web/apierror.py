"""JSON errors for the API: ``{"error": "<code>", "message": "<what to do>"}`` with a status code that fits.

Every failure under ``/api/`` answers so (Flask's own 404/405/413 included), never an HTML page; a
database that is away answers 503 with ``Retry-After`` on every path, and the site recovers by itself.
"""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify, request
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, *, retry_after: int | None = None, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after, self.extra = status, code, message, retry_after, extra


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


def error_response(status: int, code: str, message: str, *, retry_after: int | None = None, **extra) -> Response:
    resp = jsonify({"error": code, "message": message, **extra})
    resp.status_code = status
    if retry_after is not None:
        resp.headers["Retry-After"] = str(int(retry_after))
    if status == 401:
        resp.headers["WWW-Authenticate"] = 'Bearer realm="minisgl-practice"'
    return resp


def _wants_json() -> bool:
    return request.path.startswith("/api/")


def _code(e: HTTPException) -> str:
    return (e.name or "error").lower().replace(" ", "_").replace("'", "")


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def api_error(e: ApiError):
        return error_response(e.status, e.code, e.message, retry_after=e.retry_after, **e.extra)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException):
        if not _wants_json():
            return e
        message = e.description or e.name
        if e.code == 405:
            message = f"{request.method} is not allowed on {request.path}."
        elif e.code == 404:
            message = f"Nothing at {request.path}."
        resp = error_response(e.code or 500, _code(e), message)
        if e.code == 405 and getattr(e, "valid_methods", None):
            resp.headers["Allow"] = ", ".join(e.valid_methods)
        return resp

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
        raise e

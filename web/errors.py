"""Errors: JSON under ``/api/``, a plain HTML page elsewhere, with the status code that fits; never a bare 500.

JSON errors have one shape, ``{"error": {"status": 404, "code": "not_found", "message": "..."}}``
(``ERROR_SCHEMA`` in the OpenAPI document).
"""

from __future__ import annotations

from flask import Flask, jsonify, render_template, request
from werkzeug.exceptions import HTTPException, InternalServerError, RequestURITooLarge

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
            },
        }
    },
}


class ApiError(Exception):
    """Raised by a view: answered as a JSON error with this status, code and message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _code(e: HTTPException) -> str:
    return (e.name or "error").lower().replace(" ", "_").replace("'", "")


def wants_json() -> bool:
    return request.path.startswith(API_PREFIX)


def error_response(status: int, code: str, message: str, headers=None):
    if wants_json():
        resp = jsonify({"error": {"status": status, "code": code, "message": message}})
    else:
        resp = app_html(status, message)
    resp.status_code = status
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def app_html(status: int, message: str):
    from flask import make_response

    return make_response(render_template("error.html", status=status, message=message))


def register_errors(app: Flask) -> None:
    @app.before_request
    def refuse_huge_query():
        if len(request.query_string) > app.config["MAX_QUERY_BYTES"]:
            raise RequestURITooLarge(f"the query string is {len(request.query_string)} bytes; "
                                     f"at most {app.config['MAX_QUERY_BYTES']} are accepted")

    @app.errorhandler(ApiError)
    def api_error(e: ApiError):
        return error_response(e.status, e.code, e.message)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException):
        headers = {}
        if e.code == 405 and e.valid_methods:
            headers["Allow"] = ", ".join(sorted(e.valid_methods))
        return error_response(e.code or 500, _code(e), e.description or e.name, headers)

    @app.errorhandler(Exception)
    def unexpected(e: Exception):
        # ours, never the visitor's: logged with its traceback, answered without it
        app.logger.exception("unhandled error on %s %s", request.method, request.path)
        if isinstance(e, InternalServerError) and e.original_exception is not None:
            e = e.original_exception
        return error_response(500, "internal_error", f"the site failed ({type(e).__name__}); this is not your fault")

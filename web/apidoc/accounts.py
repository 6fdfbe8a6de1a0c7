"""The OpenAPI description of the account API (``web/accounts.py``)."""

from __future__ import annotations

PATHS = {
    "/api/v1/me": {"get": {
        "operationId": "me", "security": [{"bearerAuth": []}, {"sessionCookie": []}],
        "summary": "Who you are, and the CSRF token that cookie-authenticated changes send as X-CSRF-Token.",
        "responses": {"200": {"description": "You.", "content": {"application/json": {"schema": {
            "type": "object", "required": ["user", "csrf_token"],
            "properties": {"user": {"type": "object", "properties": {"username": {"type": "string"},
                                                                      "staff": {"type": "boolean"}}},
                           "csrf_token": {"type": "string"}}}}}},
            "401": {"description": "Not logged in.", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}},
            "414": {"description": "The query string is too long.", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}}},
    }},
}
SCHEMAS: dict = {}

"""The practice site: pages, the JSON API, the browser's Pyodide assets and judging, the grading server.

``create_app(config)`` is the application factory (``flask --app web run``, gunicorn
``"web:create_app()"``). Configuration comes from the environment: every ``MINISGL_PRACTICE_<KEY>``
variable sets ``<KEY>`` (see ``web/config.py``); a mapping passed to ``create_app`` wins over both.
Blueprints are registered by concern; each lives in its own module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from flask import Flask

from .config import instance_secret_key, load_config


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    # the instance folder (the default SQLite database, the secret key): MINISGL_PRACTICE_INSTANCE_PATH or ./instance
    app = Flask(__name__, instance_relative_config=True,
                instance_path=os.environ.get("MINISGL_PRACTICE_INSTANCE_PATH") or None)
    app.config.update(load_config(config))
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = instance_secret_key(app.instance_path)

    @app.after_request
    def isolation_headers(response):
        # cross-origin isolation: SharedArrayBuffer, so the judge worker can be interrupted
        # (pyodide.setInterruptBuffer); every asset is served by the site itself
        response.headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        response.headers.setdefault("Cross-Origin-Embedder-Policy", "require-corp")
        response.headers.setdefault("Cross-Origin-Resource-Policy", "same-origin")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

    from .grading import init_grading

    init_grading(app)  # the grading server: database, queue, accounts, runner API, staff page
    return app

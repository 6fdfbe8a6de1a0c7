"""The practice site: pages, the JSON API, the browser's Pyodide assets and judging, the grading server.

``create_app(config)`` is the application factory (``flask --app web run``, gunicorn
``"web:create_app()"``, or ``python -m web``). Configuration comes from the environment: every
``MINISGL_PRACTICE_<KEY>`` variable sets ``<KEY>`` (see ``web/config.py``); a mapping passed to
``create_app`` wins over both. Blueprints are registered by concern; each lives in its own module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask, url_for

from judge.exercise import ExerciseError

from .config import instance_secret_key, load_config

STATIC = Path(__file__).resolve().parent / "static"


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    # the instance folder (the default SQLite database, the secret key): MINISGL_PRACTICE_INSTANCE_PATH or ./instance
    app = Flask(__name__, instance_relative_config=True,
                instance_path=os.environ.get("MINISGL_PRACTICE_INSTANCE_PATH") or None)
    app.config.update(load_config(config))
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = instance_secret_key(app.instance_path)
    if app.config["TRUSTED_PROXIES"]:  # the client's address and scheme as the reverse proxy saw them
        from werkzeug.middleware.proxy_fix import ProxyFix

        n = int(app.config["TRUSTED_PROXIES"])
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n)

    from . import (
        accounts,
        api,
        assignments,
        gradebook_views,
        pages,
        progress,
        runners,
        similarity_api,
        staff,
        staff_similarity,
        submissions,
    )
    from .admin import register_commands
    from .catalog import CatalogCache
    from .errors import error_response, register_errors
    from .grading import init_grading
    from .headers import init_headers
    from .openapi import bp as openapi_bp

    app.extensions["minisgl.catalog"] = CatalogCache(app.config.get("EXERCISES_DIR"))
    register_errors(app)
    init_grading(app)  # the grading server: database, queue, change hub, reaper

    @app.errorhandler(ExerciseError)
    def exercises_unreadable(e: ExerciseError):
        app.logger.error("the exercises cannot be read: %s", e)
        return error_response(503, "exercises_unavailable", str(e))

    @app.template_global()
    def asset(filename: str) -> str:
        """A static file's URL with its modification time, so a rebuilt bundle is never served stale."""
        try:
            version = int((STATIC / filename).stat().st_mtime)
        except OSError:
            version = 0
        return url_for("static", filename=filename, v=version)

    from .browser_judge import bp as browser_judge

    for bp in (pages.bp, api.bp, openapi_bp, browser_judge, accounts.bp, submissions.bp, runners.bp, staff.bp,
               progress.bp, assignments.api_bp, assignments.staff_bp, gradebook_views.pages, gradebook_views.api,
               staff_similarity.bp, similarity_api.bp):
        app.register_blueprint(bp)
    register_commands(app)

    init_headers(app)  # COOP/COEP, the Content-Security-Policy, HSTS ... on every response
    return app

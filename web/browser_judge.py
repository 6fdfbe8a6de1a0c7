"""Judging in the browser: the Pyodide assets, the worker's JavaScript, and a minimal page to judge through.

    /judge/                       a minimal page: pick an exercise, edit, Run / Submit, see the verdict
    /judge/exercises.json         the browser exercises: slug, title, starter, limits
    /judge/js/<module>            client.mjs (the pages' API), supervisor.mjs, worker.mjs, core.mjs, glue.py
    /judge/assets/manifest.json   what the worker loads (sha256 and size of every file); never cached
    /judge/assets/<hash>/...      the built files (browser/build.py); each URL names a content hash,
                                  so they are cached for a year, immutable

The built tree is ``BROWSER_SITE`` (default ``.cache/browser/site`` of the checkout). Every response also gets
the app's cross-origin isolation headers (COOP/COEP), which the worker's interrupt buffer needs, and its
Content-Security-Policy; the worker's script gets the worker's own policy (web/headers.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, send_from_directory

from .headers import worker_policy

REPO_ROOT = Path(__file__).resolve().parent.parent
JS_DIR = REPO_ROOT / "browser" / "js"  # the browser runtime's scripts (the package ``browser``); served as they are
JS_FILES = ("client.mjs", "supervisor.mjs", "worker.mjs", "core.mjs", "glue.py")  # what a page loads
WORKER = "worker.mjs"  # the Web Worker's script: served with web/headers.py's worker_policy()
MIME = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
        ".whl": "application/zip", ".zip": "application/zip", ".json": "application/json",
        ".py": "text/x-python"}
IMMUTABLE = "public, max-age=31536000, immutable"

bp = Blueprint("browser_judge", __name__, url_prefix="/judge", template_folder="templates")


def site_dir() -> Path:
    configured = current_app.config.get("BROWSER_SITE")
    return Path(configured) if configured else REPO_ROOT / ".cache" / "browser" / "site"


def _send(folder: Path, name: str, cache: str) -> Response:
    suffix = Path(name).suffix
    if suffix not in MIME:
        abort(404)
    resp = send_from_directory(folder, name, mimetype=MIME[suffix], max_age=None, conditional=True, etag=True)
    resp.headers["Cache-Control"] = cache
    return resp


@bp.get("/assets/manifest.json")
def manifest() -> Response:
    if not (site_dir() / "manifest.json").is_file():
        return Response(json.dumps({"error": "the browser assets are not built: run `make browser`"}), status=503,
                        mimetype="application/json", headers={"Cache-Control": "no-store"})
    return _send(site_dir(), "manifest.json", "no-cache")


@bp.get("/assets/<path:name>")
def asset(name: str) -> Response:
    return _send(site_dir(), name, IMMUTABLE)


@bp.get("/js/<name>")
def js(name: str) -> Response:
    if name not in JS_FILES:
        abort(404)
    resp = _send(JS_DIR, name, "no-cache")
    if name == WORKER:  # a worker runs under the policy its own script arrives with
        resp.headers["Content-Security-Policy"] = worker_policy()
    return resp


@bp.get("/exercises.json")
def exercises() -> Response:
    from judge.exercise import list_exercises

    out = [{"slug": e.slug, "title": e.title, "chapter": e.chapter, "starter": e.starter,
            "test_time_limit": e.test_time_limit, "time_limit": e.time_limit}
           for e in list_exercises(current_app.config.get("BROWSER_EXERCISES")) if "browser" in e.modes]
    resp = jsonify(out)
    resp.headers["Cache-Control"] = "no-cache"
    return resp


@bp.get("/")
def page() -> str:
    return render_template("browser_judge/try.html")

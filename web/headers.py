"""The headers every response carries: cross-origin isolation, the Content-Security-Policy, and the rest.

- Cross-origin isolation (COOP/COEP/CORP): ``SharedArrayBuffer``, so the judge worker can be interrupted
  (``pyodide.setInterruptBuffer``); every asset is served by the site itself.
- ``Content-Security-Policy``: scripts only from the site's own files (no inline script, no ``eval``), styles from
  its files plus the ``<style>`` elements CodeMirror 6 injects, which carry this request's nonce
  (``csp_nonce()`` in a template: the site's stylesheet link carries it, the editor hands it to
  ``EditorView.cspNonce``); nothing from another host; no framing, no ``<base>``, no plugins.
- The judge's Web Worker (``/judge/js/worker.mjs``) runs under the policy its own script arrives with
  (``worker_policy()``): it compiles WebAssembly (Pyodide, the wheels' ``.so`` files: ``'wasm-unsafe-eval'``) and
  imports ``pyodide.asm.js`` and ``pyodide.mjs`` from ``blob:`` URLs once it has checked their bytes against the
  manifest (``browser/js/worker.mjs``). No page gets either.
- Browsers report each violation to ``POST /csp-report`` (``report-uri``), which logs one warning line per report
  on the ``web.csp`` logger (at most ``REPORTS_PER_MINUTE`` lines a minute per process): an admin sees it when a
  browser refuses something of the site's.
- ``X-Frame-Options: DENY`` (frame-ancestors for old browsers), ``Referrer-Policy: same-origin`` (a one-time
  login link in the address never leaves the site; same-origin requests keep their ``Origin``),
  ``X-Content-Type-Options: nosniff``, and ``Strict-Transport-Security`` when the site is served over HTTPS
  (the request is, or ``PUBLIC_URL`` says so behind a proxy) for ``HSTS_SECONDS`` (0: never). The embedded
  site on http://127.0.0.1 never sends it (and browsers ignore it over plain HTTP).

A view that sets one of these headers itself keeps its own value.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time

from flask import Blueprint, Flask, Response, current_app, g, request, url_for

from .errors import ApiError

log = logging.getLogger("web.csp")
bp = Blueprint("security", __name__)

ISOLATION = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
}
OTHERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
PAGE_DIRECTIVES: dict[str, str] = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",  # data: CodeMirror's lint underline is an SVG data URL
    "font-src": "'self'",
    "connect-src": "'self'",
    "worker-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
# the judge worker: WebAssembly, and the integrity-checked Pyodide scripts imported from blob: URLs
WORKER_DIRECTIVES = {**PAGE_DIRECTIVES, "script-src": "'self' blob: 'wasm-unsafe-eval'"}
REPORT_MAX_BYTES = 16384
REPORTS_PER_MINUTE = 60
REPORT_FIELDS = ("document-uri", "effective-directive", "violated-directive", "blocked-uri", "source-file",
                 "line-number", "column-number", "disposition")


def policy(directives: dict[str, str], nonce: str | None = None) -> str:
    """The header's value: the directives, the nonce (where the page used one) in ``style-src``, the report URL."""
    parts = dict(directives)
    if nonce:
        parts["style-src"] += f" 'nonce-{nonce}'"
    parts["report-uri"] = url_for("security.csp_report")
    return "; ".join(f"{name} {value}" for name, value in parts.items())


def worker_policy() -> str:
    """The judge worker's policy (served with ``/judge/js/worker.mjs``)."""
    return policy(WORKER_DIRECTIVES)


def csp_nonce() -> str:
    """This request's nonce (made on first use): the ``<style>`` elements the page's scripts add carry it."""
    if "csp_nonce" not in g:
        g.csp_nonce = secrets.token_urlsafe(18)
    return g.csp_nonce


class _Budget:
    """At most ``per_minute`` log lines a minute (a browser, or anyone, may post reports in a loop)."""

    def __init__(self, per_minute: int):
        self.per_minute, self.window, self.used, self.dropped = per_minute, 0, 0, 0
        self.lock = threading.Lock()

    def take(self) -> tuple[bool, int]:
        """(may log now, how many were dropped since the last line logged)."""
        with self.lock:
            minute = int(time.monotonic() // 60)
            if minute != self.window:
                self.window, self.used = minute, 0
            if self.used >= self.per_minute:
                self.dropped += 1
                return False, 0
            self.used += 1
            dropped, self.dropped = self.dropped, 0
            return True, dropped


_budget = _Budget(REPORTS_PER_MINUTE)


def _reports(body: bytes) -> list[dict]:
    """The violation report in a body, as ``report-uri`` sends it: ``{"csp-report": {...}}``."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("csp-report"), dict):
        return [data["csp-report"]]
    raise ApiError(400, "bad_report", 'Expected a CSP violation report, {"csp-report": {...}}.')


@bp.post("/csp-report")
def csp_report() -> Response:
    """A browser's report of something the policy refused: logged (one line, capped fields), answered 204."""
    if (request.content_length or 0) > REPORT_MAX_BYTES:
        raise ApiError(413, "too_large", f"A report is at most {REPORT_MAX_BYTES} bytes.")
    body = request.stream.read(REPORT_MAX_BYTES + 1)
    if len(body) > REPORT_MAX_BYTES:
        raise ApiError(413, "too_large", f"A report is at most {REPORT_MAX_BYTES} bytes.")
    for report in _reports(body):
        ok, dropped = _budget.take()
        if ok:
            fields = {k: str(report.get(k))[:200] for k in REPORT_FIELDS if report.get(k) not in (None, "")}
            log.warning("CSP violation: %s%s", json.dumps(fields, sort_keys=True),
                        f" ({dropped} more reports not logged)" if dropped else "")
    return Response(status=204)


def _https() -> bool:
    return request.is_secure or str(current_app.config.get("PUBLIC_URL") or "").lower().startswith("https://")


def init_headers(app: Flask) -> None:
    """Add the headers to every response of ``app``, ``csp_nonce()`` to its templates, and ``/csp-report``."""
    app.register_blueprint(bp)
    app.add_template_global(csp_nonce)
    hsts = int(app.config.get("HSTS_SECONDS") or 0)

    @app.after_request
    def security_headers(response: Response) -> Response:
        for name, value in (ISOLATION | OTHERS).items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Content-Security-Policy", policy(PAGE_DIRECTIVES, g.get("csp_nonce")))
        if hsts > 0 and _https():
            response.headers.setdefault("Strict-Transport-Security", f"max-age={hsts}")
        return response

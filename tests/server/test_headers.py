"""Every response carries the security headers (web/headers.py): pages, the JSON API, static files, the judge's
assets, error pages of every kind; the nonce is the page's own; the judge worker gets its own policy; HSTS only
over HTTPS; violation reports are logged, capped, and bad ones refused with a clear error."""

from __future__ import annotations

import json
import logging
import re

import pytest

from tests.server.pieces import fresh_database

PAGE_CSP = ("default-src 'self'", "script-src 'self';", "style-src 'self'", "img-src 'self' data:",
            "connect-src 'self'", "worker-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'",
            "frame-ancestors 'none'", "report-uri /csp-report")
FIXED = {"X-Frame-Options": "DENY", "Referrer-Policy": "same-origin", "X-Content-Type-Options": "nosniff",
         "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp",
         "Cross-Origin-Resource-Policy": "same-origin"}
A_REPORT = {"csp-report": {"document-uri": "http://127.0.0.1/exercises/x", "effective-directive": "script-src-elem",
                           "blocked-uri": "inline", "line-number": 3, "original-policy": "x" * 500}}


@pytest.fixture(scope="module")
def make_app(tmp_path_factory):
    url = fresh_database("sqlite", None, tmp_path_factory.mktemp("headers"))
    made = []

    def make(**config):
        from web import create_app

        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "test", "REAPER_SECONDS": 0,
                          "SIMILARITY_SECONDS": 0, **config})

        @app.get("/__boom")
        def boom():
            raise RuntimeError("a failure of ours")

        made.append(app)
        return app

    yield make
    for app in made:
        app.extensions["grading"].hub.stop()
        app.extensions["grading"].db.dispose()


@pytest.fixture(scope="module")
def client(make_app):
    return make_app().test_client()


def _assert_secured(r, where: str) -> str:
    for name, value in FIXED.items():
        assert r.headers.get(name) == value, (where, name, r.headers.get(name))
    csp = r.headers.get("Content-Security-Policy", "")
    for directive in PAGE_CSP:
        assert directive in csp, (where, directive, csp)
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "blob:" not in csp, (where, csp)
    assert "Strict-Transport-Security" not in r.headers, where  # plain HTTP, no PUBLIC_URL
    return csp


@pytest.mark.parametrize("method, path, status, kind", [
    ("GET", "/", 200, "text/html"),
    ("GET", "/exercises/graph-capture-buffer", 200, "text/html"),
    ("GET", "/login", 200, "text/html"),
    ("GET", "/judge/", 200, "text/html"),
    ("GET", "/api/v1/exercises", 200, "application/json"),
    ("GET", "/api/v1/openapi.json", 200, "application/json"),
    ("GET", "/api/v1/grading", 200, "application/json"),
    ("GET", "/api/v1/me", 401, "application/json"),
    ("GET", "/api/v1/submissions/1/events", 401, "application/json"),
    ("POST", "/api/v1/submissions", 401, "application/json"),
    ("GET", "/api/v1/no-such", 404, "application/json"),
    ("GET", "/static/css/site.css", 200, "text/css"),
    ("GET", "/static/no-such.css", 404, "text/html"),
    ("GET", "/judge/js/client.mjs", 200, "text/javascript"),
    ("GET", "/judge/exercises.json", 200, "application/json"),
    ("GET", "/exercises/no-such-exercise", 404, "text/html"),
    ("POST", "/", 405, "text/html"),
    ("GET", "/?q=" + "x" * 4000, 414, "text/html"),
    ("POST", "/csp-report", 400, "text/html"),
    ("GET", "/__boom", 500, "text/html"),
])
def test_every_response_carries_the_headers(client, method, path, status, kind):
    r = client.open(path, method=method)
    assert r.status_code == status, (path, r.status_code, r.data[:200])
    assert r.mimetype == kind, (path, r.mimetype)
    _assert_secured(r, f"{method} {path}")


def test_a_pages_nonce_is_its_own_and_admits_its_stylesheet_link(client):
    nonces = []
    for _ in range(2):
        r = client.get("/exercises/graph-capture-buffer")
        m = re.search(r"style-src 'self' 'nonce-([A-Za-z0-9_-]{24})'", r.headers["Content-Security-Policy"])
        assert m, r.headers["Content-Security-Policy"]
        assert f'nonce="{m.group(1)}"' in r.get_data(as_text=True)  # the link the editor reads it from
        nonces.append(m.group(1))
    assert nonces[0] != nonces[1]
    assert "nonce-" not in client.get("/api/v1/exercises").headers["Content-Security-Policy"]


def test_the_judge_worker_alone_may_compile_webassembly_and_import_its_checked_blobs(client):
    worker = client.get("/judge/js/worker.mjs")
    assert worker.status_code == 200
    csp = worker.headers["Content-Security-Policy"]
    assert "script-src 'self' blob: 'wasm-unsafe-eval';" in csp and "frame-ancestors 'none'" in csp, csp
    assert "'unsafe-eval'" not in csp and "unsafe-inline" not in csp
    for other in ("/judge/js/client.mjs", "/judge/js/supervisor.mjs", "/judge/js/core.mjs"):
        _assert_secured(client.get(other), other)


@pytest.mark.parametrize("config, base, sent", [
    ({}, "http://127.0.0.1:8000", False),  # the embedded site
    ({}, "https://practice.example", True),  # TLS to the site itself
    ({"PUBLIC_URL": "https://practice.example"}, "http://10.0.0.5:8000", True),  # behind a TLS proxy
    ({"PUBLIC_URL": "https://practice.example", "HSTS_SECONDS": 0}, "https://practice.example", False),
    ({"HSTS_SECONDS": 600}, "https://practice.example", True),
])
def test_hsts_only_over_https(make_app, config, base, sent):
    client = make_app(**config).test_client()
    for path in ("/", "/api/v1/exercises", "/nope"):
        r = client.get(path, base_url=base)
        got = r.headers.get("Strict-Transport-Security")
        if sent:
            assert got == f"max-age={config.get('HSTS_SECONDS', 31536000)}", (path, got)
        else:
            assert got is None, (path, got)


def test_a_violation_report_is_logged_on_one_line_with_capped_fields(client, caplog):
    report = json.loads(json.dumps(A_REPORT))
    report["csp-report"]["source-file"] = "evil\nCSP violation: forged " + "y" * 400
    with caplog.at_level(logging.WARNING, logger="web.csp"):
        r = client.post("/csp-report", data=json.dumps(report), content_type="application/csp-report")
    assert r.status_code == 204 and r.data == b""
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "web.csp"]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    fields = json.loads(lines[0].split(": ", 1)[1])
    assert fields["effective-directive"] == "script-src-elem" and fields["blocked-uri"] == "inline"
    assert len(fields["source-file"]) == 200 and "original-policy" not in fields


NOT_A_REPORT = "Expected a CSP violation report"


@pytest.mark.parametrize("body, content_type, status, says", [
    (b"", "application/csp-report", 400, NOT_A_REPORT),
    (b"not json", "application/csp-report", 400, NOT_A_REPORT),
    (b"[1, 2]", "application/json", 400, NOT_A_REPORT),
    (b'{"csp-report": "x"}', "application/csp-report", 400, NOT_A_REPORT),
    (b"[" * 5000 + b"]" * 5000, "application/json", 400, NOT_A_REPORT),
    (b"\xff\xfe{", "application/csp-report", 400, NOT_A_REPORT),
    (json.dumps({"csp-report": {"x": "y" * 20000}}).encode(), "application/csp-report", 413, "at most 16384 bytes"),
])
def test_bad_reports_are_refused_with_a_clear_error(client, body, content_type, status, says):
    r = client.post("/csp-report", data=body, content_type=content_type)
    assert r.status_code == status, (r.status_code, r.data[:200])
    assert says in r.get_data(as_text=True), r.data[:300]
    _assert_secured(r, "bad report")


def test_reports_beyond_the_budget_are_counted_not_logged(client, caplog, monkeypatch):
    from web import headers

    monkeypatch.setattr(headers, "_budget", headers._Budget(3))
    with caplog.at_level(logging.WARNING, logger="web.csp"):
        for _ in range(8):
            assert client.post("/csp-report", json=A_REPORT).status_code == 204
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "web.csp"]
    assert len(lines) == 3, lines
    headers._budget.window -= 1  # the next minute
    with caplog.at_level(logging.WARNING, logger="web.csp"):
        client.post("/csp-report", json=A_REPORT)
    assert caplog.records[-1].getMessage().endswith("(5 more reports not logged)")

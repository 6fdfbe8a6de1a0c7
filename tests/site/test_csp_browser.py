"""The site under its Content-Security-Policy in headless Chromium: every page (the catalog, an exercise, the minimal
judge page, log in, an invitation, a login link, the account, the staff page, the API document, an error page),
judging in the browser (Run and Submit: Pyodide in its Web Worker) and on the grading server (queued, followed
over Server-Sent Events), with no violation. A violation is seen three ways: the page's
``securitypolicyviolation`` events, a console message about the policy (pages and workers), and the report the
browser posts to ``/csp-report`` (logged on ``web.csp``; the only way a worker's refusals reach us). Probes show
that each kind of refusal would be seen: an inline script and style, a worker compiling WebAssembly under the
page policy, and the editor's ``<style>`` without its nonce."""

from __future__ import annotations

import logging
import re
import threading
import time
import urllib.request

import pytest
from werkzeug.serving import make_server

from tests.server.pieces import fresh_database
from tests.site.sitekit import BUFFER_SOLUTION as CORRECT
from tests.site.sitekit import Guard, LiveSite, judged, need_judge, open_context, type_code
from tests.support import free_port

SLUG = "graph-capture-buffer"
STAFF, PASSWORD = "tess", "plinth-marmot-88-quasar"
PORTS = range(8300, 8350)
READY_MS = 240_000

# probes: what the policy must refuse, and the watch must see (routes of the test's own app, never of the site)
INLINE_PAGE = ('<!doctype html><html lang="en"><head><title>probe</title><style>body { color: red }</style></head>'
               '<body><p style="color: red">probe</p><script>document.title = "ran"</script></body></html>')
WORKER_PAGE = ('<!doctype html><html lang="en"><head><title>probe</title>'
               '<script type="module" src="/__probe/start.js"></script></head><body></body></html>')
WORKER_START = ('const w = new Worker("/__probe/worker.js", { type: "module" });'
                'w.onmessage = (e) => { document.title = e.data; };')
WORKER_WASM = ('WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))'
               '.then(() => postMessage("compiled"), (e) => postMessage("refused"));')


class Reports(logging.Handler):
    """The violation reports the site logged (``web.csp``), as they arrive."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """The site on a fresh grading database with a staff account, a runner, an invitation and a login link;
    the probes' routes; the reports it logs."""
    from flask import Response

    from web import auth, create_app

    tmp = tmp_path_factory.mktemp("csp")
    app = create_app({"DATABASE_URL": fresh_database("sqlite", None, tmp), "SECRET_KEY": "test", "TESTING": True,
                      "REAPER_SECONDS": 0, "SSE_HEARTBEAT_SECONDS": 1, "POLL_SECONDS": 0.1})
    app.instance_path = str(tmp / "instance")
    db = app.extensions["grading"].db
    auth.create_user(db, STAFF, PASSWORD, staff=True)
    links = {"runner": auth.create_runner(db, "laptop"), "invite": auth.create_link(db, kind="invite"),
             "login": auth.create_link(db, kind="login", username=STAFF)}
    probes = {"/__probe/inline": (INLINE_PAGE, "text/html"), "/__probe/worker": (WORKER_PAGE, "text/html"),
              "/__probe/start.js": (WORKER_START, "text/javascript"),
              "/__probe/worker.js": (WORKER_WASM, "text/javascript")}
    for path, (body, mimetype) in probes.items():
        app.add_url_rule(path, path, lambda body=body, mimetype=mimetype: Response(body, mimetype=mimetype))
    reports = Reports()
    logging.getLogger("web.csp").addHandler(reports)
    server = make_server("127.0.0.1", free_port(PORTS), app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield LiveSite(url=f"http://127.0.0.1:{server.server_port}", server=server), links, reports
    server.shutdown()
    logging.getLogger("web.csp").removeHandler(reports)
    app.extensions["grading"].hub.stop()
    db.dispose()


@pytest.fixture
def watched(browser, secured):
    """A browser profile on the site; the test reads what it saw (``guard``) and what the site was told."""
    site, links, reports = secured
    guard = Guard()
    ctx = open_context(browser, site, guard)
    reports.lines.clear()
    yield ctx, guard, site, links, reports
    ctx.close()


def visit(page, url: str, status: int = 200, guard: Guard | None = None):
    """Open ``url``: it answers ``status`` under the site's policy (scripts of its own files only, no framing);
    with ``guard``, the page loaded with no violation so far."""
    response = page.goto(url)
    assert response.status == status, (url, response.status)
    csp = response.headers.get("content-security-policy", "")
    assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp, (url, csp)
    if guard is not None:
        page.wait_for_load_state("load")
        assert not guard.csp, f"{url}: the policy refused {guard.csp}"
    return response


def settle(page, reports: Reports, seconds: float = 1.5) -> None:
    """Give the browser time to post its reports (they travel on their own)."""
    page.wait_for_timeout(int(seconds * 1000))


def wait_python(page) -> None:
    page.wait_for_function(
        "() => ['ready', 'unavailable'].includes(document.getElementById('python-status').dataset.state)",
        timeout=READY_MS)
    state = page.locator("#python-status")
    assert state.get_attribute("data-state") == "ready", state.inner_text()


def runner_seen(site: LiveSite, token: str) -> None:
    """The runner claims once (nothing queued): the site counts it online, so the exercise page shows the panel."""
    req = urllib.request.Request(site("/api/v1/runner/claim"), data=b"{}", method="POST",
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status in (200, 204)


def test_every_page_and_judging_run_under_the_policy_with_no_violation(watched):
    need_judge()
    ctx, guard, site, links, reports = watched
    page = ctx.new_page()
    # logged out
    for path in ("/", "/exercises/", "/api/v1/openapi.json", f"/invite/{links['invite']}",
                 f"/login/link/{links['login']}"):
        visit(page, site(path), guard=guard)
    visit(page, site("/exercises/no-such-exercise"), 404, guard)
    visit(page, site("/staff/"), guard=guard)  # redirected to log in
    assert "/login" in page.url
    # the minimal judge page: Pyodide boots in its worker and judges
    visit(page, site("/judge/"), guard=guard)
    page.wait_for_function("() => !document.getElementById('run').disabled", timeout=READY_MS)
    page.select_option("#exercise", SLUG)
    page.fill("#source", CORRECT)
    page.click("#run")
    page.wait_for_selector("#verdict-status", timeout=120_000)
    assert page.get_attribute("#verdict-status", "data-status") == "accepted"
    # log in, the account (a new token shown), the staff page
    visit(page, site("/login?next=/account"), guard=guard)
    page.fill("#username", STAFF)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/account")
    page.click("form[action$='/account/tokens'] button")
    page.wait_for_selector("code.token")
    assert not guard.csp, guard.csp
    visit(page, site("/staff/"), guard=guard)
    # the exercise page: the editor styled under the nonce, Run and Submit in the browser, then the GPU server
    runner_seen(site, links["runner"])
    visit(page, site(f"/exercises/{SLUG}"), guard=guard)
    page.wait_for_selector(".cm-content[contenteditable=true]")
    styled = page.evaluate("() => [getComputedStyle(document.querySelector('.cm-editor')).display,"
                           " [...document.querySelectorAll('style')].filter((s) => s.nonce).length]")
    assert styled[0] == "flex" and styled[1] >= 1, styled  # CodeMirror's own <style> applied, with the nonce
    type_code(page, CORRECT)
    wait_python(page)
    page.click("#run-button")
    assert judged(page)["status"] == "accepted"
    page.click("#submit-button")
    v = judged(page)
    assert v["run"] is False and v["status"] == "accepted", v
    page.wait_for_selector("#server-actions:not([hidden])")
    page.click("#server-submit")
    page.wait_for_function("() => document.getElementById('server-panel').dataset.state === 'queued'")
    page.wait_for_function("() => /queue/i.test(document.getElementById('server-status').textContent)")
    settle(page, reports)
    assert not guard.csp, f"the policy refused, in a page: {guard.csp}"
    assert not reports.lines, f"the browser reported: {reports.lines}"
    assert not guard.errors and not guard.blocked, guard


def test_an_inline_script_and_style_are_refused_and_seen(watched):
    ctx, guard, site, _, reports = watched
    page = ctx.new_page()
    visit(page, site("/__probe/inline"))
    assert page.title() == "probe"  # the inline script did not run
    settle(page, reports)
    directives = {v["directive"] for v in guard.csp if isinstance(v, dict)}
    assert {"script-src-elem", "style-src-elem", "style-src-attr"} <= directives, guard.csp
    assert any("Content Security Policy" in v for v in guard.csp if isinstance(v, str)), guard.csp
    assert any('"blocked-uri": "inline"' in line for line in reports.lines), reports.lines


def test_a_workers_refusal_is_reported(watched):
    """A worker's violations fire no event in the page: the report to /csp-report is how they are seen."""
    ctx, guard, site, _, reports = watched
    page = ctx.new_page()
    visit(page, site("/__probe/worker"))
    page.wait_for_function("() => document.title !== 'probe'")
    assert page.title() == "refused"  # the page policy has no 'wasm-unsafe-eval'
    deadline = time.monotonic() + 10
    while not reports.lines and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert any("/__probe/worker.js" in line and "wasm-eval" in line for line in reports.lines), reports.lines


def test_the_editor_without_its_nonce_is_refused(watched):
    """CodeMirror puts its styles in a <style> element: the page's nonce is what admits it."""
    ctx, guard, site, _, reports = watched
    page = ctx.new_page()

    def strip_nonce(route):
        response = route.fetch()
        route.fulfill(response=response, body=re.sub(r' nonce="[^"]*"', "", response.text()))

    page.route(site(f"/exercises/{SLUG}"), strip_nonce)
    visit(page, site(f"/exercises/{SLUG}"))
    page.wait_for_selector(".cm-content[contenteditable=true]")
    settle(page, reports)
    assert any(isinstance(v, dict) and v["directive"] == "style-src-elem" for v in guard.csp), guard.csp
    assert page.evaluate("() => getComputedStyle(document.querySelector('.cm-editor')).display") != "flex"

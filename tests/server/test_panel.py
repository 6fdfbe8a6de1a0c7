"""The exercise page's "Judge on the grading server" panel in headless Chromium, with the embedded default's
runner (``this-machine``, the local executor, no GPU): without runners there is no panel; with one, the panel
says where the job runs; Cancel is there only while a submission is queued, and cancels it; a correct solution
of a CUDA Graph exercise is judged (the site under gunicorn, a local runner) and labelled with where and how;
after a reload the panel shows that verdict again, and "Your last verdicts" lists it once, as the server's."""

from __future__ import annotations

import pytest
import requests

from tests.server.pieces import Accounts, RunnerProc, fresh_database, reference_code
from tests.site.sitekit import Guard, LiveSite, axe_violations, need_bundle, open_context, type_code

EX = "graph-capture-loop"


@pytest.fixture(scope="module")
def browser(chromium_browser):
    need_bundle()
    return chromium_browser


def _login(page, site, user, password):
    page.goto(site.url + f"/login?next=/exercises/{EX}")
    page.fill("#username", user)
    page.fill("#password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"**/exercises/{EX}")


def _seen(site, token: str) -> None:
    """The runner's first claim (nothing queued, no long-poll): the site counts it online; no job is taken."""
    r = requests.post(site.url + "/api/v1/runner/claim", json={"wait": 0}, timeout=30,
                      headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 204, r.text


def _world(site_factory, tmp_path, env=None):
    """A fresh site with the learner ada and the this-machine runner's token (not yet claiming)."""
    from web.db import open_database
    from web.embedded import RUNNER

    url = fresh_database("sqlite", None, tmp_path)
    db = open_database(url)
    acc = Accounts(db)
    acc.user("ada", password="ada-password-1")
    rtoken = acc.runner(RUNNER)
    db.dispose()
    site = site_factory(url, env=env or {})
    return site, LiveSite(url=site.url, server=None), rtoken


def _typed_reference(page):
    code = reference_code(EX)
    if code.startswith('"""'):  # typed by hand: the editor closes quotes as they are typed
        code = code.split('"""', 2)[2].lstrip()
    type_code(page, code)


WHERE = "by this machine's runner: CPU with emulated CUDA graphs, trusted mode."


def test_judge_on_the_grading_server_from_the_page(browser, site_factory, tmp_path):
    site, live, rtoken = _world(site_factory, tmp_path)
    guard = Guard()
    ctx = open_context(browser, live, guard)
    page = ctx.new_page()
    state = "() => document.getElementById('server-panel').dataset.state"
    cancel = page.locator("#server-cancel")
    try:
        page.goto(site.url + f"/exercises/{EX}")
        page.wait_for_function("() => window.minisglPractice !== undefined")
        page.wait_for_timeout(500)
        assert page.locator("#server-panel").is_hidden()  # no runner yet: no panel
        _seen(site, rtoken)  # online, but no process claims yet: a submission stays queued
        page.reload()
        page.wait_for_selector("#server-panel:not([hidden])")
        assert page.inner_text("#server-h") == "Judge on the grading server"
        assert page.inner_text("#server-where") == "It runs now on: this machine's runner: CPU, emulated CUDA graphs."
        assert page.locator("#server-login").is_visible()  # logged out: a link to log in
        _login(page, live, "ada", "ada-password-1")
        page.wait_for_selector("#server-actions:not([hidden])")
        assert not cancel.is_visible()  # idle: nothing to cancel
        _typed_reference(page)
        page.click("#server-submit")
        page.wait_for_function(f"() => ({state})() === 'queued'")
        assert cancel.is_visible() and page.inner_text("#server-status") == "Queued: next in line."
        cancel.click()
        page.wait_for_function(f"() => ({state})() === 'cancelled'")
        assert not cancel.is_visible() and page.inner_text("#server-status").startswith("Cancelled")
        runner = RunnerProc(site.url, rtoken, args=["--work-dir", str(tmp_path / "work")],
                            log_path=tmp_path / "runner.log").start()
        try:
            page.click("#server-submit")
            page.wait_for_function(f"() => ({state})() === 'done'", timeout=180_000)
            assert not cancel.is_visible()
            assert page.locator("#server-verdict").get_attribute("data-status") == "accepted"
            assert WHERE in page.inner_text("#server-status")
            assert "emulated" in page.inner_text("#server-note")
            assert page.locator("#server-verdict .test-card").count() >= 10
            label = "Judged on: grading server, CPU with emulated CUDA graphs, trusted"
            assert page.inner_text("#server-verdict .verdict-where").endswith(label)
            assert page.inner_text("#server-verdict .verdict-source").lower() == "server"
            assert page.inner_text("#history-count") == "1"  # the server's verdict joins the page's history
            assert axe_violations(page) == []
        finally:
            runner.signal(15)
            runner.wait(60)
        # after a reload: the panel asks for this learner's latest submission and shows its verdict again
        page.reload()
        page.wait_for_function("() => document.getElementById('server-verdict').dataset.status === 'accepted'")
        assert WHERE in page.inner_text("#server-status") and page.inner_text("#server-status").startswith("Judged ")
        assert not cancel.is_visible()
        assert page.inner_text("#history-count") == "1"  # listed once, not again at each reload
        page.click("#history > summary")
        entry = page.locator("#history-list .history-item").first
        assert entry.locator(".verdict-source").inner_text().lower() == "server"
        assert "grading server, CPU with emulated CUDA graphs, trusted" in entry.inner_text()
        assert page.locator(".ex-header [data-progress-for]").inner_text().endswith("solved")
    finally:
        ctx.close()
    assert guard.clean(), guard


def test_a_refused_event_stream_still_shows_the_verdict(browser, site_factory, tmp_path):
    """The server takes no event stream of this learner (429, as over its cap): the page reads the submission
    instead and still shows the verdict."""
    site, live, rtoken = _world(site_factory, tmp_path, env={"MINISGL_PRACTICE_STREAMS_PER_USER": "0"})
    guard = Guard()
    ctx = open_context(browser, live, guard)
    page = ctx.new_page()
    refused = []
    page.on("response", lambda r: refused.append(r.url) if "/events" in r.url and r.status == 429 else None)
    runner = RunnerProc(site.url, rtoken, args=["--work-dir", str(tmp_path / "work")],
                        log_path=tmp_path / "runner.log").start()
    try:
        _login(page, live, "ada", "ada-password-1")
        page.wait_for_selector("#server-actions:not([hidden])")
        _typed_reference(page)
        page.click("#server-submit")
        page.wait_for_function("() => document.getElementById('server-panel').dataset.state === 'done'",
                               timeout=180_000)
        assert page.locator("#server-verdict").get_attribute("data-status") == "accepted"
        assert WHERE in page.inner_text("#server-status")
        assert refused, "the server refused the page's event stream (429)"
    finally:
        runner.signal(15)
        runner.wait(60)
        ctx.close()
    assert guard.clean(), guard

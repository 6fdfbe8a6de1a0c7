"""The exercise page's "Judge on the GPU server" panel in headless Chromium: log in, type a correct solution
of a CUDA Graph exercise, judge it on the grading server (the site under gunicorn, a local runner), watch
the queue status, and see the verdict in the page's cards; without runners there is no panel."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("streams", ["streamed", "refused"])
def test_judge_on_the_gpu_server_from_the_page(browser, site_factory, tmp_path, streams):
    """``refused``: the server takes no event stream of this learner (429, as over its cap): the page reads the
    submission instead and still shows the verdict."""
    url = fresh_database("sqlite", None, tmp_path)
    from web.db import open_database

    db = open_database(url)
    acc = Accounts(db)
    acc.user("ada", password="ada-password-1")
    rtoken = acc.runner("laptop")
    db.dispose()
    site = site_factory(url, env={"MINISGL_PRACTICE_STREAMS_PER_USER": "0"} if streams == "refused" else {})
    live = LiveSite(url=site.url, server=None)
    guard = Guard()
    ctx = open_context(browser, live, guard)
    page = ctx.new_page()
    try:
        page.goto(site.url + f"/exercises/{EX}")
        page.wait_for_function("() => window.minisglPractice !== undefined")
        page.wait_for_timeout(500)
        assert page.locator("#server-panel").is_hidden()  # no runner yet: no panel
        runner = RunnerProc(site.url, rtoken, args=["--work-dir", str(tmp_path / "work")],
                            log_path=tmp_path / "runner.log").start()
        try:
            page.wait_for_timeout(3000)  # the runner's first claim makes it "seen"
            page.reload()
            page.wait_for_selector("#server-panel:not([hidden])")
            assert page.locator("#server-login").is_visible()  # logged out: a link to log in
            _login(page, live, "ada", "ada-password-1")
            page.wait_for_selector("#server-actions:not([hidden])")
            code = reference_code(EX)
            if code.startswith('"""'):  # typed by hand: the editor closes quotes as they are typed
                code = code.split('"""', 2)[2].lstrip()
            type_code(page, code)
            page.click("#server-submit")
            page.wait_for_function("() => document.getElementById('server-verdict').dataset.status !== undefined",
                                   timeout=180_000)
            statuses = page.evaluate("() => document.getElementById('server-panel').dataset.state")
            assert statuses == "done"
            assert page.locator("#server-verdict").get_attribute("data-status") == "accepted"
            assert "Judged by laptop" in page.inner_text("#server-status")
            assert "emulated" in page.inner_text("#server-note")
            assert page.locator("#server-verdict .test-card").count() >= 10
            assert page.inner_text("#history-count") == "1"  # the server's verdict joins the page's history
            assert axe_violations(page) == []
        finally:
            runner.signal(15)
            runner.wait(60)
    finally:
        ctx.close()
    assert guard.clean(), guard

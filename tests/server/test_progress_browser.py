"""Progress that follows the learner, in headless Chromium against the site under gunicorn (SQLite): ada saves her
code to the server from one browser profile and has an accepted grading-server verdict; from a FRESH profile
(empty storage) she logs in, sees the exercise solved on the list page (the browser itself still has nothing),
and opens the saved code into the editor; the code it replaced can be put back, and code of her own is replaced
only once she agrees. A save while offline, or over the size limit (413), is said in the panel and loses nothing.

The accepted verdict is a done submission written with the ORM into the site's database (what a runner leaves
behind: tests/server/test_panel.py judges with a real runner; this test is about what the pages make of it)."""

from __future__ import annotations

import json

import pytest

from tests.server.pieces import Accounts, fresh_database
from tests.site.sitekit import Guard, LiveSite, axe_violations, editor_text, need_bundle, open_context, type_code

EX, OTHER = "graph-capture-loop", "graph-capture-buffer"
MINE = "# saved on the server by ada\nx = 1"


@pytest.fixture(scope="module")
def browser(chromium_browser):
    need_bundle()
    return chromium_browser


def _login(page, site, next_path):
    page.goto(site.url + f"/login?next={next_path}")
    page.fill("#username", "ada")
    page.fill("#password", "ada-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(f"**{next_path}")


def _accepted(db, exercise):
    from web.db import utcnow
    from web.models import DONE, Submission, User

    with db.session() as s:
        uid = s.query(User.id).filter(User.username == "ada").scalar()
        s.add(Submission(user_id=uid, exercise=exercise, mode="gpu", run_only=False, code=MINE, state=DONE,
                         result="accepted", finished_at=utcnow(),
                         verdict=json.dumps({"status": "accepted", "passed": 9, "total": 9, "tests": []})))


def test_progress_and_code_follow_the_learner_to_a_fresh_browser(browser, site_factory, tmp_path):
    from web.db import open_database

    url = fresh_database("sqlite", None, tmp_path)
    db = open_database(url)
    Accounts(db).user("ada", password="ada-password-1")
    site = site_factory(url, env={"MINISGL_PRACTICE_MAX_CODE_BYTES": "64"})  # a small limit to go over
    live = LiveSite(url=site.url, server=None)
    guard = Guard()
    first = open_context(browser, live, guard)
    try:
        page = first.new_page()
        _login(page, live, f"/exercises/{EX}")
        page.wait_for_selector("#server-save")  # logged in: the panel's code part, with no runner at all
        assert page.inner_text("#server-h") == "Your code on the grading server"
        type_code(page, MINE)
        page.route("**/api/v1/workspaces/*", lambda r: r.abort() if r.request.method == "PUT" else r.continue_())
        page.click("#server-save")  # offline: said in the panel, nothing lost
        page.wait_for_function("() => document.getElementById('server-code').dataset.state === 'error'")
        assert page.inner_text("#server-code-status").startswith("Could not reach the server")
        assert editor_text(page) == MINE
        page.unroute("**/api/v1/workspaces/*")
        page.evaluate("() => window.minisglPractice.setCode('x = ' + '1'.repeat(80))")
        page.click("#server-save")  # over the limit: the server's 413, said in the panel
        page.wait_for_function("() => document.getElementById('server-code').dataset.state === 'error'")
        assert "84 bytes; the limit is 64" in page.inner_text("#server-code-status")
        page.evaluate(f"() => window.minisglPractice.setCode({json.dumps(MINE)})")
        page.click("#server-save")
        page.wait_for_function("() => document.getElementById('server-code').dataset.state === 'saved'")
        assert page.inner_text("#server-code-status").startswith("Saved to the server")
        assert page.locator("#server-open").is_hidden()  # the editor holds what is saved
    finally:
        first.close()
    _accepted(db, EX)
    db.dispose()

    fresh = open_context(browser, live, guard)  # another browser: no progress, no code
    try:
        page = fresh.new_page()
        _login(page, live, "/")
        page.wait_for_function(f"() => document.querySelector('[data-progress-for=\"{EX}\"]').dataset.status"
                               " === 'solved'")
        assert page.inner_text(f"[data-progress-for='{EX}']") == "solved"
        assert page.inner_text(f"[data-progress-for='{OTHER}']") == "not tried"
        summary = page.inner_text("#progress-summary")
        assert summary.startswith("Solved 1 of ") and "grading server" in summary
        page.select_option("#f-status", "solved")  # the filter sees the merged status too
        assert page.locator(".exercise-item:not([hidden])").evaluate_all("els => els.map(e => e.dataset.id)") == [EX]
        stored = page.evaluate(f"() => localStorage.getItem('minisgl-practice.v1.{EX}')")
        assert stored is None  # the server's progress is shown, never written into the browser's

        page.goto(site.url + f"/exercises/{EX}")
        page.wait_for_function("() => window.minisglPractice !== undefined")
        page.wait_for_function(f"() => document.querySelector('.ex-header [data-progress-for=\"{EX}\"]')"
                               ".dataset.status === 'solved'")
        starter = page.evaluate("() => window.minisglPractice.exercise.starter")
        assert editor_text(page) == starter
        opener = page.locator("#server-open")
        opener.wait_for(state="visible")
        assert opener.inner_text().startswith("Open saved code (saved ")
        opener.click()  # the editor holds the starter: nothing to ask
        assert editor_text(page) == MINE
        assert page.inner_text("#server-code-status").startswith("Opened your code saved on the server")
        assert opener.is_hidden()
        kept = page.evaluate(f"() => JSON.parse(localStorage.getItem('minisgl-practice.v1.{EX}')).replaced.code")
        assert kept == starter  # what was replaced stays recoverable
        page.click("#server-put-back")
        assert editor_text(page) == starter and opener.is_visible()
        assert axe_violations(page) == []
        type_code(page, "y = 2")  # code of its own: opening the saved code asks first
        page.once("dialog", lambda d: d.dismiss())
        opener.click()
        assert editor_text(page) == "y = 2"
        page.once("dialog", lambda d: d.accept())
        opener.click()
        assert editor_text(page) == MINE
    finally:
        fresh.close()
    assert guard.clean(), guard

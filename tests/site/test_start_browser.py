"""Where a learner starts, in headless Chromium: the home page's start block (Start with the first exercise,
Continue where you left off), the book's chapter on the list and the exercise page (linked only where
BOOK_URL is set), the one-time login page and Log out in the header, at laptop and phone widths."""

from __future__ import annotations

import json
import threading

import pytest
from werkzeug.serving import make_server

from judge.exercise import list_exercises, load_chapters
from tests.server.pieces import fresh_database
from tests.site.sitekit import PHONE, PORTS, Guard, LiveSite, axe_violations, open_context
from tests.support import free_port

BOOK_URL = "https://book.example/mini-sglang/ch{number}/?from={id}"
USER = "ada-start"
PASSWORD = "wombat-harbour-seventy-quietly"


@pytest.fixture(scope="module")
def booked(tmp_path_factory):
    """The site with BOOK_URL set, on a fresh grading database with one learner and a one-time login link."""
    from web import auth, create_app
    from web.config import load_config

    tmp = tmp_path_factory.mktemp("start")
    app = create_app({"DATABASE_URL": fresh_database("sqlite", None, tmp), "SECRET_KEY": "test", "TESTING": True,
                      "REAPER_SECONDS": 0, "SESSION_COOKIE_SECURE": False, "BOOK_URL": BOOK_URL})
    app.instance_path = str(tmp / "instance")
    assert load_config({"BOOK_URL": BOOK_URL})["BOOK_URL"] == BOOK_URL
    db = app.extensions["grading"].db
    auth.create_user(db, USER, PASSWORD)
    link = auth.create_link(db, kind="login", username=USER)
    server = make_server("127.0.0.1", free_port(PORTS), app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield LiveSite(url=f"http://127.0.0.1:{server.server_port}", server=server), link
    server.shutdown()
    app.extensions["grading"].hub.stop()
    db.dispose()


def touch(page, site, slug: str) -> None:
    """Open an exercise (unless it is open) and type in its editor, as a learner does; wait until it is saved."""
    if page.url != site(f"/exercises/{slug}"):
        page.goto(site(f"/exercises/{slug}"))
    page.wait_for_selector(".cm-content[contenteditable=true]")
    page.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("\n# started")
    page.wait_for_function("() => document.getElementById('save-state').textContent.startsWith('Saved')")


def test_start_with_the_first_exercise_then_continue_where_left_off(page, site):
    first, second = list_exercises()[:2]  # course order
    page.goto(site("/"))
    start = page.locator("#start")
    text = start.inner_text()
    for words in ("An exercise", "Run", "Submit", "browser", "local", "GPU", "advisory", "grading server"):
        assert words in text, (words, text)
    assert start.bounding_box()["y"] < page.locator("#filters").bounding_box()["y"]  # before the list's form
    assert not page.get_by_role("link", name="Continue where you left off").is_visible()  # nothing touched yet
    page.get_by_role("link", name="Start with the first exercise").click()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert page.url == site(f"/exercises/{first.slug}")
    assert page.locator("h1").inner_text() == first.title
    touch(page, site, first.slug)
    touch(page, site, second.slug)  # the newer: the one to continue
    page.get_by_role("navigation", name="Site").get_by_role("link", name="Exercises").click()
    resume = page.get_by_role("link", name="Continue where you left off")
    resume.wait_for()
    assert resume.inner_text() == f"Continue where you left off: {second.title}"
    resume.click()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert page.url == site(f"/exercises/{second.slug}")
    assert "# started" in page.evaluate("() => window.minisglPractice.code()")
    touch(page, site, first.slug)  # the newest again, whatever the order of their ids
    page.goto(site("/"))
    assert resume.inner_text() == f"Continue where you left off: {first.title}"


def import_progress(page, tmp_path, exercises: dict) -> None:
    """Read `exercises` ({slug: entry}) into this browser through the list page's Import (the export format)."""
    f = tmp_path / "progress.json"
    f.write_text(json.dumps({"format": "minisgl-practice-progress", "version": 1,
                             "exported_at": "2026-12-01T09:00:00.000Z", "exercises": exercises}), encoding="utf-8")
    page.evaluate("() => { document.getElementById('progress-message').textContent = ''; }")
    page.set_input_files("#import-progress", str(f))
    page.wait_for_function("() => document.getElementById('progress-message').textContent.startsWith('Imported')")


def typed(at: str) -> dict:
    return {"code": "# started", "savedAt": at, "verdicts": []}


def solved(at: str) -> dict:
    verdict = {"at": at, "status": "accepted", "run": False, "passed": 3, "total": 3, "tests": [], "source": None}
    return {"code": "# done", "savedAt": at, "verdicts": [verdict], "solved": True, "solvedAt": at}


def test_once_the_last_exercise_is_solved_the_next_unsolved_is_offered(page, site, tmp_path):
    ex = list_exercises()  # course order, the list's
    page.goto(site("/"))
    actions = page.locator("#start .start-actions a:visible")
    first, resume, nxt = page.locator("#start-first"), page.locator("#continue-last"), page.locator("#next-unsolved")

    def shown() -> list[tuple[str, bool]]:
        """The start block's visible buttons in order: their text, and whether each is the primary one."""
        return [(a.inner_text(), "primary" in a.get_attribute("class").split()) for a in actions.all()]

    start = ("Start with the first exercise", True)
    assert shown() == [start]
    import_progress(page, tmp_path, {ex[0].slug: typed("2026-12-01T09:00:00.000Z")})  # tried, not solved
    assert shown() == [(f"Continue where you left off: {ex[0].title}", True), (start[0], False)]
    import_progress(page, tmp_path, {ex[1].slug: solved("2026-12-01T10:00:00.000Z")})  # the newest: solved
    assert shown() == [(f"Next: {ex[2].title}", True), (start[0], False)]
    assert nxt.get_attribute("href").endswith(f"/exercises/{ex[2].slug}") and not resume.is_visible()
    colours = "e => getComputedStyle(e).backgroundColor"
    assert nxt.evaluate(colours) != first.evaluate(colours)  # it looks like the primary button, Start does not
    page.reload()  # the same from the stored progress
    assert shown() == [(f"Next: {ex[2].title}", True), (start[0], False)]
    import_progress(page, tmp_path, {ex[2].slug: solved("2026-12-01T08:00:00.000Z"),  # solved, but not last
                                     ex[3].slug: solved("2026-12-01T07:00:00.000Z")})
    assert shown() == [(f"Next: {ex[4].title}", True), (start[0], False)]  # unsolved, in list order
    import_progress(page, tmp_path, {ex[-1].slug: solved("2026-12-01T11:00:00.000Z")})  # the list's last one
    assert shown() == [(f"Next: {ex[0].title}", True), (start[0], False)]  # from the top: the first unsolved
    nxt.click()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert page.url == site(f"/exercises/{ex[0].slug}")
    touch(page, site, ex[0].slug)  # typed in again: the newest, and unsolved, so it is the one to continue
    page.goto(site("/"))
    assert shown() == [(f"Continue where you left off: {ex[0].title}", True), (start[0], False)]


def test_book_chapters_without_the_setting_are_plain_text(page, site):
    used = {e.chapter for e in list_exercises()}
    chapters = [c for c in load_chapters() if c.id in used]  # the site lists the chapters that have exercises
    page.goto(site("/"))
    assert page.locator("a.book-link").count() == 0
    refs = page.locator(".chapter .ch-book").all_inner_texts()
    assert refs == [f"Book chapter {c.book}" for c in chapters]
    page.goto(site("/exercises/graph-capture-buffer"))  # a CUDA Graph exercise: the book's chapter 18
    assert page.locator(".breadcrumb .ch-book").inner_text() == "Book chapter 18"
    assert page.locator(".breadcrumb a").count() == 2  # Exercises, the course chapter: no third link


def test_book_chapters_with_the_setting_link_to_the_book(browser, booked):
    site, _ = booked
    guard = Guard()
    ctx = open_context(browser, site, guard)
    page = ctx.new_page()
    page.goto(site("/"))
    links = page.locator(".chapter .ch-book a.book-link")
    used = {e.chapter for e in list_exercises()}
    want = [(BOOK_URL.format(number=c.book, id=c.id), f"Book chapter {c.book}: {c.title}") for c in load_chapters()
            if c.id in used]
    assert [(a.get_attribute("href"), a.inner_text()) for a in links.all()] == want
    page.goto(site("/exercises/graph-capture-buffer"))
    link = page.locator(".breadcrumb a.book-link")
    assert link.get_attribute("href") == "https://book.example/mini-sglang/ch18/?from=cuda-graph"
    assert link.inner_text() == "Book chapter 18: CUDA Graph"
    ctx.close()
    assert guard.clean(), guard


@pytest.mark.parametrize("value", ["book.example/ch{number}", "https://book.example/{chapter}",
                                   "https://book.example/{number", "javascript:alert({number})",
                                   "https://book.example/{number:>999999999}", "https://book.example/{id.__class__}"])
def test_a_bad_book_url_is_refused_at_start(value):
    from web.config import load_config

    with pytest.raises(ValueError, match="MINISGL_PRACTICE_BOOK_URL"):
        load_config(environ={"MINISGL_PRACTICE_BOOK_URL": value})


def test_home_on_a_phone_shows_the_start_and_the_list_before_the_filters(browser, site):
    guard = Guard()  # (laptop, light and dark: test_pages_browser.test_accessibility_axe)
    ctx = open_context(browser, site, guard, viewport=PHONE, color_scheme="dark")
    page = ctx.new_page()
    page.goto(site("/"))
    assert not page.locator("#filters").is_visible()  # behind "Search and filters"
    first = page.locator(".exercise-item a.ex-title").first.bounding_box()
    assert page.locator("#start-first").is_visible() and first["y"] + first["height"] <= PHONE["height"], first
    found = axe_violations(page)
    page.get_by_text("Search and filters").click()
    page.fill("#f-q", "graph-pad-and-replay")  # a slug: one exercise, however the bank grows
    assert page.locator(".exercise-item:not([hidden])").count() == 1
    page.reload()  # a filter in the address: the form is open
    assert page.locator("#f-q").is_visible() and page.locator("#f-q").input_value() == "graph-pad-and-replay"
    ctx.close()
    assert not found, json.dumps(found, indent=1)
    assert guard.clean(), guard


@pytest.mark.parametrize(("scheme", "viewport"), [("light", None), ("dark", PHONE)])
def test_the_login_pages_and_log_out_in_the_header(browser, booked, scheme, viewport):
    site, link = booked
    guard = Guard()
    ctx = open_context(browser, site, guard, color_scheme=scheme, **({"viewport": viewport} if viewport else {}))
    page = ctx.new_page()
    page.goto(site(f"/login/link/{link}"))  # opening it spends nothing
    panel = page.locator(".auth-panel")
    assert panel.locator("h1").inner_text() == f"Log in as {USER}"
    assert "works once" in panel.inner_text()
    button = panel.locator("button.primary")
    assert button.count() == 1 and button.inner_text() == f"Log in as {USER}"
    colours = "e => getComputedStyle(e).backgroundColor"
    assert button.evaluate(colours) != panel.evaluate(colours)  # the primary button, not a plain one
    found = axe_violations(page)
    page.goto(site("/login"))
    found += axe_violations(page)
    page.fill("#username", USER)
    page.fill("#password", PASSWORD)
    page.locator(".auth-panel button.primary").click()
    page.wait_for_url(lambda url: "/login" not in url)
    nav = page.get_by_role("navigation", name="Site")
    items = [nav.get_by_role("link", name=n, exact=True) for n in ("Exercises", "API", USER)]
    items.append(nav.get_by_role("button", name="Log out"))
    boxes = [it.bounding_box() for it in items]
    middles = [round(b["y"] + b["height"] / 2) for b in boxes]
    if viewport is None:  # a laptop: one row, every item on the same line
        assert max(middles) - min(middles) <= 1, boxes
    else:  # a phone may wrap the navigation, but Log out shares its line with another item
        assert any(abs(m - middles[-1]) <= 1 for m in middles[:-1]), boxes
    look = "e => [getComputedStyle(e).color, getComputedStyle(e).textDecorationLine, getComputedStyle(e).fontSize]"
    assert items[-1].evaluate(look) == items[1].evaluate(look)  # Log out looks like the links beside it
    found += axe_violations(page)
    nav.get_by_role("button", name="Log out").click()
    page.wait_for_load_state()
    assert nav.get_by_role("link", name="Log in").is_visible()
    ctx.close()
    assert not found, json.dumps(found, indent=1)
    assert guard.clean(), guard

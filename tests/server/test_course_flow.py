"""Running a course, end to end in headless Chromium with real keystrokes (issue 21, must-hold 1).

The site under gunicorn on SQLite with this machine's runner judging for real. Staff type an assignment in (due
in a year); ada submits on time from the exercise page and saves her code to the server; staff move the due time
into the past with a late window still open, and grant bob an extension; bob submits (on time, by his
extension) and cy submits (late, in the late window). Staff see the three on the gradebook, download its CSV,
and the CSV's rows equal the page's table. Then ada logs in from a fresh browser profile: the list page shows
the exercise solved, the assignment accepted on time, and the exercise page opens her saved code."""

from __future__ import annotations

import csv
import io

from tests.server.pieces import Accounts, RunnerProc, fresh_database, reference_code
from tests.site.sitekit import Guard, LiveSite, axe_violations, need_bundle, open_context, type_code
from web.db import open_database, utcnow
from web.embedded import RUNNER

EX = "req-lengths"
PASSWORDS = {"boss": "boss-pass-phrase", "ada": "ada-password-1", "bob": "bob-password-1", "cy": "cy-password-1"}


def _type_login(page, base: str, username: str) -> None:
    page.goto(base + "/login")
    page.focus("#username")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORDS[username])
    page.keyboard.press("Enter")
    page.wait_for_url(base + "/")


def _type_when(page, field: str, year: int, month_day: tuple[str, str], hm: tuple[str, str, str]) -> None:
    """A datetime-local field typed segment by segment as a person does (en-US: month, day, year; Tab; hour,
    minute, AM/PM)."""
    page.focus(f"#{field}")
    for k in [*month_day, str(year), "Tab", *hm]:
        page.keyboard.press("Tab") if k == "Tab" else page.keyboard.type(k)


def _submit_on_the_page(page, base: str, code: str, *, typed: bool) -> None:
    """Put the code in the editor (typed, or through the page's own hook) and judge it on the grading server;
    wait for the runner's verdict."""
    page.goto(f"{base}/exercises/{EX}")
    page.wait_for_selector("#server-actions:not([hidden])")
    if typed:
        type_code(page, code)
    else:
        page.evaluate("(code) => window.minisglPractice.setCode(code)", code)
    page.click("#server-submit")
    page.wait_for_function("() => document.getElementById('server-panel').dataset.state === 'done'",
                           timeout=180_000)
    assert page.locator("#server-verdict").get_attribute("data-status") == "accepted"


def _table(page) -> list[list[str]]:
    """The gradebook's rows as the CSV writes them, read from the page's cells."""
    return page.evaluate("""() => [...document.querySelectorAll('#gradebook tbody tr[data-username]')].map((tr) => {
        const out = [tr.dataset.username, tr.dataset.group];
        for (const td of tr.querySelectorAll('td[data-exercise]'))
          out.push(td.dataset.result, td.dataset.attempts, td.dataset.acceptedAt, td.dataset.timing);
        for (const td of tr.querySelectorAll('td[data-assignment]')) out.push(td.dataset.solved, td.dataset.late);
        return out;
      })""")


def test_a_course_from_the_assignment_to_the_gradebook_and_a_second_computer(chromium_browser, site_factory,
                                                                           tmp_path):
    need_bundle()
    url = fresh_database("sqlite", None, tmp_path)
    db = open_database(url)
    acc = Accounts(db)
    acc.user("boss", password=PASSWORDS["boss"], staff=True)
    for name in ("ada", "bob", "cy"):
        acc.user(name, password=PASSWORDS[name])
    rtoken = acc.runner(RUNNER)
    db.dispose()
    site = site_factory(url)
    base = site.url
    live = LiveSite(url=base, server=None)
    runner = RunnerProc(base, rtoken, args=["--work-dir", str(tmp_path / "work")],
                        log_path=tmp_path / "runner.log").start()
    guard = Guard()
    year = utcnow().year + 1
    code = reference_code(EX)
    if code.startswith('"""'):  # typed by hand: the editor closes quotes as they are typed, so no docstrings
        code = code.split('"""', 2)[2].lstrip()
    code = "\n".join(line for line in code.split("\n") if not line.strip().startswith('"""'))
    staff_ctx = open_context(chromium_browser, live, guard, locale="en-US")
    staff = staff_ctx.new_page()
    try:
        # staff type the assignment in: opened three years ago, due in a year, no late window yet
        _type_login(staff, base, "boss")
        staff.goto(base + "/staff/")
        staff.click("#staff-assignments")
        staff.click("#new-assignment")
        assert "UTC" in staff.inner_text("#assignment-form")
        staff.focus("#f-name")
        staff.keyboard.type("Week 1")
        staff.keyboard.press("Tab")
        staff.keyboard.type(EX)
        staff.keyboard.press("Escape")  # closes the datalist's suggestions
        _type_when(staff, "f-opens_at", year - 3, ("12", "01"), ("09", "00", "A"))
        _type_when(staff, "f-due_at", year, ("12", "08"), ("05", "30", "P"))
        staff.click("#assignment-form button[type=submit]")
        staff.wait_for_selector("#saved")
        assert axe_violations(staff) == []
        edit_url = staff.url.split("?")[0]

        # ada: on time; she saves her code to the server too
        ada_ctx = open_context(chromium_browser, live, guard, locale="en-US")
        ada = ada_ctx.new_page()
        _type_login(ada, base, "ada")
        assert f"Week 1: due {year}-12-08 17:30 UTC" in ada.inner_text("#your-assignments")
        _submit_on_the_page(ada, base, code, typed=True)
        saved = ada.evaluate("() => window.minisglPractice.code()")  # what she typed, as the editor holds it
        ada.click("#server-save")
        ada.wait_for_function("() => /saved/i.test(document.getElementById('server-code-status').textContent)")
        ada.reload()
        assert "accepted on time" in ada.inner_text(".assignment-due")
        ada_ctx.close()

        # staff: the due time moves into last year, late submissions until next year; bob gets an extension
        staff.goto(edit_url)
        _type_when(staff, "f-due_at", year - 2, ("12", "08"), ("05", "30", "P"))
        _type_when(staff, "f-late_until", year, ("12", "08"), ("05", "30", "P"))
        staff.click("#assignment-form button[type=submit]")
        staff.wait_for_selector("#saved")
        assert staff.input_value("#f-due_at") == f"{year - 2}-12-08T17:30"
        assert staff.input_value("#f-late_until") == f"{year}-12-08T17:30"
        staff.focus("#x-username")
        staff.keyboard.type("bob")
        _type_when(staff, "x-due", year, ("06", "30"), ("11", "00", "P"))
        staff.click("#extension-form button[type=submit]")
        staff.wait_for_selector("#extension-list td:text-is('bob')")

        for name in ("bob", "cy"):
            ctx = open_context(chromium_browser, live, guard, locale="en-US")
            page = ctx.new_page()
            _type_login(page, base, name)
            _submit_on_the_page(page, base, code, typed=False)  # ada typed hers
            page.reload()
            said = page.inner_text(".assignment-due")
            assert ("accepted on time" if name == "bob" else "accepted late") in said, said
            ctx.close()

        # the gradebook, for the assignment: ada and bob on time, cy late; its CSV equals the page
        staff.goto(base + "/staff/gradebook")
        staff.select_option("select[name=assignment]", label="Week 1")
        staff.click(".gradebook-filters button[type=submit]")
        staff.wait_for_selector("#gradebook")
        rows = _table(staff)
        assert [r[0] for r in rows] == ["ada", "bob", "cy"]
        assert [(r[2], r[3], r[5]) for r in rows] == [("accepted", "1", "on_time"), ("accepted", "1", "on_time"),
                                                      ("accepted", "1", "late")]
        assert [r[6:] for r in rows] == [["1", "0"], ["1", "0"], ["1", "1"]]  # Week 1 solved (of 1), late
        marks = staff.locator(f"#gradebook tbody td[data-exercise='{EX}']").all_inner_texts()
        assert marks == ["✓", "✓", "✓L"]
        with staff.expect_download() as dl:
            staff.click("#gradebook-csv")
        lines = list(csv.reader(io.StringIO(open(dl.value.path(), encoding="utf-8").read())))
        assert lines[0][:3] == ["username", "group", EX] and lines[0][-2:] == ["Week 1 solved (of 1)", "Week 1 late"]
        assert lines[1:] == rows
        assert axe_violations(staff) == []

        # ada on another computer: a fresh profile, nothing in its storage
        fresh_ctx = open_context(chromium_browser, live, guard, locale="en-US")
        fresh = fresh_ctx.new_page()
        _type_login(fresh, base, "ada")
        fresh.wait_for_function(f"() => document.querySelector('[data-progress-for=\"{EX}\"]')"
                                ".textContent.trim().endsWith('solved')")
        assert "1 of 1 accepted" in fresh.inner_text("#your-assignments")
        # the start block goes on from the server's last verdict, not from the first exercise again
        fresh.wait_for_selector("#next-unsolved:not([hidden])")
        assert fresh.inner_text("#next-unsolved").startswith("Next: ") and fresh.locator("#start-first").count() == 1
        assert "primary" in fresh.get_attribute("#next-unsolved", "class")
        fresh.goto(f"{base}/exercises/{EX}")
        fresh.wait_for_selector("#server-open:not([hidden])")
        fresh.click("#server-open")
        fresh.wait_for_selector("#server-put-back:not([hidden])")  # opened: what it replaced can be put back
        assert fresh.evaluate("() => window.minisglPractice.code()") == saved
        fresh_ctx.close()
        assert guard.clean(), guard
    finally:
        staff_ctx.close()
        runner.signal(15)
        runner.wait(60)

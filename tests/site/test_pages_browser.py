"""The pages in headless Chromium: list and filters, the editor, progress kept across reloads and profiles,
the verdict cards (fed a real verdict of the real judge), themes, the keyboard, phone widths, axe-core."""

from __future__ import annotations

import json
import re

import pytest

from judge.exercise import find_exercise
from tests.site.sitekit import BUFFER_SOLUTION, PHONE, Guard, axe_violations, editor_text, open_context, type_code

SLUG = "graph-capture-buffer"  # a CUDA Graph exercise
# a known-wrong variant (copy_from forgets positions), without its docstring: typed, quotes would pair up
_MUTANT = find_exercise(SLUG).path / "mutants" / "forgot_positions.py"
WRONG = _MUTANT.read_text(encoding="utf-8").split('"""\n', 1)[1].lstrip()
CRASH = '''class GraphCaptureBuffer:
    def set_batch(self, batch):
        limit = batch.padded_size
        raise ValueError(f"no views yet ({limit})")

    def copy_from(self, batch):
        pass
'''


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    """Real verdicts of the real judge (in this process, on real PyTorch), for the cards to show."""
    from judge.harness import judge_source

    e = find_exercise(SLUG)
    return {
        "wrong": judge_source(e, WRONG, mode="browser").to_dict(),
        "crash": judge_source(e, CRASH, mode="browser", run_only=True).to_dict(),
        "run_ok": judge_source(e, BUFFER_SOLUTION, mode="browser", run_only=True).to_dict(),
        "submit_ok": judge_source(e, BUFFER_SOLUTION, mode="browser").to_dict(),
    }


def open_exercise(page, site, slug: str = SLUG):
    page.goto(site(f"/exercises/{slug}"))
    page.wait_for_selector(".cm-content[contenteditable=true]")


def show(page, verdict: dict) -> None:
    page.evaluate("v => window.minisglPractice.recordVerdict(v)", verdict)


def test_list_filters_persist_in_the_url_and_open_an_exercise(page, site):
    page.goto(site("/"))
    items = page.locator(".exercise-item:not([hidden])")
    total = items.count()
    assert total >= 5
    page.fill("#f-q", "graph-pad-and-replay")  # a slug: one exercise however the bank grows
    assert [li.get_attribute("data-id") for li in items.all()] == ["graph-pad-and-replay"]
    assert "q=graph-pad-and-replay" in page.url
    page.fill("#f-q", "")
    page.select_option("#f-difficulty", "easy")
    easy = [li.get_attribute("data-id") for li in items.all()]
    assert SLUG in easy and "graph-capture-loop" not in easy
    assert "difficulty=easy" in page.url
    page.reload()  # the filter survives: the server renders it, the script keeps it
    assert page.locator("#f-difficulty").input_value() == "easy"
    assert [li.get_attribute("data-id") for li in items.all()] == easy
    assert page.locator("#list-count").inner_text().startswith(f"{len(easy)} of {total}")
    page.select_option("#f-status", "solved")
    assert items.count() == 0 and page.locator("#list-empty").is_visible()
    page.select_option("#f-status", "")
    page.click(f".exercise-item[data-id={SLUG}] a.ex-title")
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert page.url.endswith(f"/exercises/{SLUG}")
    assert page.locator("h1").inner_text() == find_exercise(SLUG).title


def test_code_is_autosaved_reset_and_undone(page, site):
    open_exercise(page, site)
    starter = editor_text(page)
    type_code(page, "class GraphCaptureBuffer:\n    def copy_from(self, batch):\n        return (batch, [1, 2])\n")
    mine = editor_text(page)
    page.wait_for_function("() => document.getElementById('save-state').textContent.startsWith('Saved')")
    page.reload()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert editor_text(page) == mine
    page.click("#reset-button")
    assert editor_text(page) == starter
    page.locator(".cm-content").click()
    page.keyboard.press("Control+z")
    assert editor_text(page) == mine


def test_run_locally_downloads_the_code_in_the_editor(page, site, tmp_path):
    open_exercise(page, site)
    type_code(page, "x = [1, 2]\n")
    page.click("#run-locally summary")
    assert f"python practice/judge.py test {SLUG} --run" in page.locator("#run-locally").inner_text()
    with page.expect_download() as dl:
        page.click("#download-code")
    assert dl.value.suggested_filename == f"{SLUG}.py"
    dl.value.save_as(tmp_path / "code.py")
    assert (tmp_path / "code.py").read_text(encoding="utf-8") == editor_text(page) == "x = [1, 2]"


def test_syntax_errors_are_underlined_as_you_type(page, site):
    open_exercise(page, site)
    type_code(page, "def broken x:\n    pass\n")
    page.wait_for_selector(".cm-lintRange-error", timeout=5000)
    type_code(page, "def fine(x):\n    return x\n")
    page.wait_for_timeout(800)
    assert page.locator(".cm-lintRange-error").count() == 0


def test_failing_verdict_cards_show_the_message_and_the_line(page, site, verdicts):
    open_exercise(page, site)
    show(page, verdicts["wrong"])
    v = verdicts["wrong"]
    assert page.locator(".verdict-status").inner_text() == "Wrong answer"
    assert page.locator(".verdict-counts").inner_text().startswith(f"{v['passed']}/{v['total']} passed")
    cards = page.locator(".test-card")
    assert cards.count() == len(v["tests"])
    failing = page.locator(".test-card[data-test=test_example_copy_from_copies_every_input]")
    assert failing.get_attribute("open") is not None  # failed cards are open
    assert page.locator(".test-card.status-pass").first.get_attribute("open") is None
    message = failing.locator(".test-message").inner_text()
    line = copy_check_line()
    assert re.search(r"buf\.positions\[:\d+\] must hold batch\.positions after copy_from", message), message
    assert f"tests.py, line {line}" in message
    failing.locator("button.goto-test").click()  # the failing line, in the listing of the visible tests
    target = page.locator(f"#tests-line-{line}")
    assert page.locator("#visible-tests").get_attribute("open") is not None
    assert "test-line-target" in target.get_attribute("class")
    assert "after copy_from" in target.inner_text()
    assert page.evaluate("() => document.activeElement.id") == f"tests-line-{line}"
    # a hidden test's line is named in its message but not linked (its source is not shown)
    hidden = page.locator(".test-card[data-test=test_copy_from_every_step]")
    assert "tests.py, line" in hidden.locator(".test-message").inner_text()
    assert hidden.locator("button.goto-test").count() == 0


def test_a_crash_links_to_the_learners_line(page, site, verdicts):
    open_exercise(page, site)
    type_code(page, CRASH)
    show(page, verdicts["crash"])
    assert page.locator(".verdict-status").inner_text() == "Runtime error"
    card = page.locator(".test-card[data-test=test_example_set_batch_makes_views]")
    assert 'File "submission.py", line 4' in card.locator(".test-message").inner_text()
    card.locator("button.goto-code").click()
    assert page.locator(".cm-activeLine").inner_text().strip() == 'raise ValueError(f"no views yet ({limit})")'
    assert page.evaluate("() => document.activeElement.classList.contains('cm-content')")


def test_a_passing_run_says_visible_tests_passed_and_only_a_submit_is_accepted(page, site, verdicts):
    run, submit = verdicts["run_ok"], verdicts["submit_ok"]
    assert run["run"] and run["status"] == "accepted" and not submit["run"] and submit["status"] == "accepted"
    visible, everything = run["total"], submit["total"]
    assert 0 < visible < everything
    open_exercise(page, site)
    show(page, run)
    head, status = page.locator(".verdict-head"), page.locator(".verdict-status")
    history = page.locator("#history-list li")
    assert status.inner_text() == f"Visible tests passed · {visible}/{visible}"
    assert page.locator(".verdict-next").inner_text() == (
        f"Not accepted yet: Submit runs all {everything} tests ({everything - visible} of them hidden).")
    assert "Accepted" not in page.locator("#verdict").inner_text()
    assert f"Visible tests passed: {visible}/{visible} · Run ·" in history.first.text_content()
    assert page.locator(".ex-header [data-progress-for]").inner_text() == "tried"
    background = "e => getComputedStyle(e).backgroundColor"
    run_look = head.evaluate(background)
    show(page, submit)
    assert status.inner_text() == "Accepted" and page.locator(".verdict-next").count() == 0
    assert head.evaluate(background) != run_look  # the filled green of Accepted is the Submit's alone
    assert f"Accepted: {submit['passed']}/{everything} · Submit ·" in history.first.text_content()
    assert page.locator(".ex-header [data-progress-for]").inner_text() == "solved"
    page.reload()  # the kept Run, shown again from the history, says the same
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert status.inner_text() == "Accepted"
    page.click("#history summary")
    history.nth(1).locator("button").click()
    assert status.inner_text() == f"Visible tests passed · {visible}/{visible}"
    assert f"Submit runs all {everything} tests" in page.locator(".verdict-next").inner_text()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_statements_code_blocks_keep_their_lines_and_scroll_inside(browser, site, scheme):
    """req-lengths' length diagram at a 1280-px window: its labels stay over their marks (no line wraps), the
    block scrolls sideways by itself, the page does not."""
    guard = Guard()
    ctx = open_context(browser, site, guard, viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    page = ctx.new_page()
    open_exercise(page, site, "req-lengths")
    blocks = page.evaluate("""() => [...document.querySelectorAll('.statement > .prose pre')].map((pre) => {
      const s = getComputedStyle(pre);
      const inner = pre.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);
      return {text: pre.textContent, lines: pre.textContent.replace(/\\n$/, '').split('\\n').length,
              rows: Math.round(inner / parseFloat(s.lineHeight)), wraps: s.whiteSpace !== 'pre',
              overflow: s.overflowX, wide: pre.scrollWidth > pre.clientWidth};
    })""")
    diagram = [b for b in blocks if "max_device_len" in b["text"] and "|---" in b["text"]]
    assert len(diagram) == 1, blocks
    for b in blocks:
        assert not b["wraps"] and b["rows"] == b["lines"], b
        assert b["overflow"] == "auto", b
    assert diagram[0]["wide"], diagram  # wider than the column at this width: it scrolls
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")  # the page itself does not
    pre = page.locator(".statement > .prose pre", has_text="max_device_len")
    pre.focus()  # the keyboard scrolls it too
    page.keyboard.press("ArrowRight")
    page.wait_for_function("e => e.scrollLeft > 0", arg=pre.element_handle())
    found = axe_violations(page)
    # the statement's closing words are the page's own (item: no terminal needed); Run locally keeps the commands
    prose = page.locator(".statement > .prose").inner_text()
    assert "judge.py" not in prose and prose.rstrip().endswith("the commands are under Run locally, below.")
    assert "python practice/judge.py test req-lengths --run" in page.locator("#run-locally").text_content()
    ctx.close()
    assert not found, json.dumps(found, indent=1)
    assert guard.clean(), guard


def test_progress_survives_reload_and_moves_to_a_fresh_profile(browser, site, verdicts, tmp_path):
    guard = Guard()
    first = open_context(browser, site, guard)
    page = first.new_page()
    open_exercise(page, site)
    type_code(page, WRONG)
    code = editor_text(page)
    show(page, verdicts["wrong"])
    accepted = {**verdicts["wrong"], "status": "accepted", "passed": verdicts["wrong"]["total"], "failed": 0}
    show(page, accepted)  # (only its status matters here: the judging flows test a real accepted Submit)
    page.wait_for_function("() => document.getElementById('save-state').textContent.startsWith('Saved')")
    page.reload()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert editor_text(page) == code
    assert page.locator("#history-count").inner_text() == "2"
    page.goto(site("/"))
    assert page.locator(f"[data-progress-for={SLUG}]").inner_text().endswith("solved")
    with page.expect_download() as dl:
        page.click("#export-progress")
    export = tmp_path / "progress.json"
    dl.value.save_as(export)
    data = json.loads(export.read_text(encoding="utf-8"))
    assert data["format"] == "minisgl-practice-progress" and data["version"] == 1
    assert data["exercises"][SLUG]["solved"] is True and len(data["exercises"][SLUG]["verdicts"]) == 2
    first.close()

    fresh = open_context(browser, site, guard)  # a new profile: empty storage
    page = fresh.new_page()
    page.goto(site("/"))
    assert page.locator(f"[data-progress-for={SLUG}]").inner_text() == "not tried"
    page.set_input_files("#import-progress", str(export))
    page.wait_for_function("() => document.getElementById('progress-message').textContent.startsWith('Imported')")
    assert page.locator(f"[data-progress-for={SLUG}]").inner_text().endswith("solved")
    open_exercise(page, site)
    assert editor_text(page) == code
    assert page.locator("#history-count").inner_text() == "2"
    fresh.close()
    assert guard.clean(), guard


@pytest.mark.parametrize("content, says", [
    ("{this is not json", "not JSON"),
    ('{"format": "something-else", "version": 1, "exercises": {}}', "not a progress export"),
    ('{"format": "minisgl-practice-progress", "version": 99, "exercises": {}}', "newer site"),
    ('{"format": "minisgl-practice-progress", "version": 1, "exercises": {"ok-one": {"code": "x"}, '
     '"Bad Id": {"code": "y"}}}', "not an exercise id"),
    ('{"format": "minisgl-practice-progress", "version": 1, "exercises": {"ok-one": {"code": 5}}}', "must be text"),
])
def test_an_import_that_does_not_parse_is_refused_and_changes_nothing(page, site, tmp_path, content, says):
    open_exercise(page, site)
    type_code(page, "x = 1\n")
    page.wait_for_function("() => document.getElementById('save-state').textContent.startsWith('Saved')")
    page.goto(site("/"))
    before = page.evaluate("() => JSON.stringify(Object.entries(localStorage).sort())")
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    page.set_input_files("#import-progress", str(bad))
    page.wait_for_function("() => document.getElementById('progress-message').textContent !== ''")
    message = page.locator("#progress-message").inner_text()
    assert message.startswith("Import refused") and says in message and "nothing was imported" in message
    assert page.evaluate("() => JSON.stringify(Object.entries(localStorage).sort())") == before


HINTS = find_exercise(SLUG).hints


def test_a_hint_is_shown_counted_kept_and_exported(page, site, tmp_path):
    n = len(HINTS)
    open_exercise(page, site)
    hints = page.locator("#hint-list > li")
    assert hints.count() == n and not any(hints.nth(i).is_visible() for i in range(n))
    assert page.locator("#show-hint").inner_text() == f"Show hint 1 of {n}"
    page.click("#show-hint")
    assert hints.nth(0).is_visible() and not hints.nth(1).is_visible()
    assert "*views*" not in hints.nth(0).inner_text() and "views" in hints.nth(0).inner_text()  # Markdown, rendered
    page.reload()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert hints.nth(0).is_visible() and not hints.nth(1).is_visible()
    assert page.locator("#show-hint").inner_text() == f"Show hint 2 of {n}"
    assert page.locator("#history summary").inner_text().endswith(f"1 of {n} hints used")
    page.goto(site("/"))
    with page.expect_download() as dl:
        page.click("#export-progress")
    export = tmp_path / "progress.json"
    dl.value.save_as(export)
    assert json.loads(export.read_text(encoding="utf-8"))["exercises"][SLUG]["hints"] == 1
    # an export made before hints were counted (no "hints") still imports: none used
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "minisgl-practice-progress", "version": 1, "exercises": {SLUG: {
        "code": "x = 1\n", "savedAt": None, "verdicts": [], "solved": False, "solvedAt": None}}}), encoding="utf-8")
    page.set_input_files("#import-progress", str(old))
    page.wait_for_function("() => document.getElementById('progress-message').textContent.startsWith('Imported')")
    open_exercise(page, site)
    assert page.locator("#history summary").inner_text().endswith(f"0 of {n} hints used")
    assert not hints.nth(0).is_visible()


def test_the_reference_waits_behind_a_confirmation_until_solved_or_all_hints_used(page, site, verdicts):
    n = len(HINTS)
    open_exercise(page, site)
    dialog, solution = page.locator("#reveal-confirm"), page.locator("#solution")
    page.click("#show-hint")
    page.click("#reveal-solution")
    assert dialog.is_visible()
    assert page.locator("#reveal-confirm-text").inner_text() == \
        f"You have not solved it and have {n - 1} hints left. Show the reference anyway?"
    assert page.evaluate("() => document.activeElement.id") == "reveal-cancel"  # the safe choice has the focus
    page.click("#reveal-cancel")
    assert dialog.is_hidden() and solution.is_hidden()
    assert page.evaluate("() => document.activeElement.id") == "reveal-solution"
    page.keyboard.press("Enter")  # with the keyboard: Esc cancels too
    assert dialog.is_visible()
    page.keyboard.press("Escape")
    assert dialog.is_hidden() and solution.is_hidden()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # Cancel, then Show
    assert page.evaluate("() => document.activeElement.id") == "reveal-show"
    page.keyboard.press("Enter")
    page.wait_for_selector("#solution .solution-code .cm-content")
    assert dialog.is_hidden() and "self.positions" in page.locator("#solution .solution-code").inner_text()
    assert page.locator("#solution .prose").inner_text().strip()

    for _ in range(n - 1):  # every hint used: the reference at once
        page.click("#show-hint")
    assert page.locator("#show-hint").is_hidden() and page.locator("#hint-list > li").nth(n - 1).is_visible()
    page.reload()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    page.click("#reveal-solution")
    page.wait_for_selector("#solution .solution-code .cm-content")
    assert dialog.is_hidden()

    page.evaluate("() => localStorage.clear()")  # solved, no hint used: at once too
    page.reload()
    page.wait_for_selector(".cm-content[contenteditable=true]")
    show(page, {**verdicts["wrong"], "status": "accepted", "passed": verdicts["wrong"]["total"], "failed": 0})
    page.click("#reveal-solution")
    page.wait_for_selector("#solution .solution-code .cm-content")
    assert dialog.is_hidden()


def test_the_reference_says_loading_until_it_arrives_and_why_it_did_not(page, site):
    held = []
    open_exercise(page, site)
    page.route("**/api/v1/exercises/*/solution", lambda r: held.append(r))  # answered below, when the test says so
    for _ in HINTS:
        page.click("#show-hint")
    page.click("#reveal-solution")
    page.wait_for_function("() => document.querySelector('#solution .solution-loading') !== null")
    assert page.locator("#solution").inner_text() == "Loading the reference…"
    assert page.locator("#solution").get_attribute("aria-busy") == "true"
    assert held, "the reference was not asked for"
    held.pop().fulfill(status=503, json={"error": {"status": 503, "code": "unavailable", "message": "the shelf fell"}})
    page.wait_for_selector("#solution .solution-error")
    assert "Could not load the reference: the shelf fell" in page.locator("#solution").inner_text()
    assert page.locator("#solution").get_attribute("aria-busy") is None
    page.unroute("**/api/v1/exercises/*/solution")
    page.click("#reveal-solution")  # the button works again
    page.wait_for_selector("#solution .solution-code .cm-content")


def test_theme_follows_the_system_and_the_toggle(browser, site):
    guard = Guard()
    ctx = open_context(browser, site, guard, color_scheme="dark")
    page = ctx.new_page()
    page.goto(site("/"))
    bg = "() => getComputedStyle(document.body).backgroundColor"
    dark_bg = page.evaluate(bg)
    assert page.locator(".theme-label").inner_text() == "Theme: system (dark)"
    page.click("#theme-toggle")  # system -> light
    assert page.evaluate("() => document.documentElement.dataset.theme") == "light"
    light_bg = page.evaluate(bg)
    assert light_bg != dark_bg
    page.reload()
    assert page.evaluate(bg) == light_bg  # the choice is kept
    page.click("#theme-toggle")  # light -> dark
    assert page.evaluate(bg) == dark_bg
    ctx.close()
    assert guard.clean(), guard


def test_usable_with_the_keyboard_alone(page, site):
    open_exercise(page, site)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "skip-link"
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.id") == "main"
    seen = []
    for _ in range(40):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("() => document.activeElement.id || document.activeElement.className"))
        if "cm-content" in seen[-1]:
            break
    assert "reveal-solution" in seen and "run-button" in seen and "submit-button" in seen and "cm-content" in seen[-1]
    page.keyboard.type("# typed from the keyboard")
    assert "# typed from the keyboard" in editor_text(page)
    page.keyboard.press("Tab")  # Tab indents inside the editor
    assert page.evaluate("() => document.activeElement.classList.contains('cm-content')")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")  # Esc, then Tab leaves the editor
    assert not page.evaluate("() => document.activeElement.classList.contains('cm-content')")
    page.keyboard.press("Control+Enter")  # the Run shortcut works outside the editor too
    page.wait_for_function("() => document.getElementById('verdict').dataset.status !== undefined")


@pytest.mark.parametrize("path", ["/", f"/exercises/{SLUG}"])
def test_fits_a_phone_width(browser, site, path, verdicts):
    guard = Guard()
    ctx = open_context(browser, site, guard, viewport=PHONE)
    page = ctx.new_page()
    page.goto(site(path))
    if path != "/":
        page.wait_for_selector(".cm-content[contenteditable=true]")
        show(page, verdicts["wrong"])
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page is wider than the phone: {width}"
    ctx.close()
    assert guard.clean(), guard


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_accessibility_axe(browser, site, verdicts, scheme):
    guard = Guard()
    ctx = open_context(browser, site, guard, color_scheme=scheme)
    page = ctx.new_page()
    page.goto(site("/"))
    found = axe_violations(page)
    open_exercise(page, site)
    show(page, verdicts["wrong"])
    page.click("#visible-tests summary")
    page.click("#run-locally summary")
    page.click("#show-hint")
    page.click("#reveal-solution")
    page.wait_for_selector("#reveal-confirm[open]")
    found += axe_violations(page)  # the hints open and the confirmation open
    page.click("#reveal-show")
    page.wait_for_selector("#solution .solution-code .cm-content")
    found += axe_violations(page)
    page.goto(site("/exercises/no-such-exercise"))
    found += axe_violations(page)
    ctx.close()
    assert not found, json.dumps(found, indent=1)
    assert guard.clean(), guard


def copy_check_line() -> int:
    """The line of graph-capture-buffer's tests.py whose check a missing position copy fails."""
    from pathlib import Path

    tests = Path(__file__).resolve().parents[2] / "exercises" / "graph-capture-buffer" / "tests.py"
    return next(i for i, text in enumerate(tests.read_text().splitlines(), 1)
                if "assert" in text and "after copy_from" in text)

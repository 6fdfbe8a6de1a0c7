"""The learner's flows with the real in-browser judge (Pyodide in a Web Worker, branch `browser`), in headless
Chromium with every other host blocked: type a solution with keystrokes, Run, Submit, accepted, solved after a
reload; a wrong solution shows the failing test's message and line; an endless loop is a timeout and the next
Run works; the next exercise page restores Python from this browser's snapshot, and refuses a foreign one."""

from __future__ import annotations

import re

import pytest

from judge.exercise import find_exercise
from tests.site.sitekit import BUFFER_SOLUTION as CORRECT
from tests.site.sitekit import editor_text, judged, need_judge, type_code

SLUG = "graph-capture-buffer"
WRONG = CORRECT.replace("        self.positions[s] = batch.positions\n", "")
ENDLESS = '''class GraphCaptureBuffer:
    def set_batch(self, batch):
        while True:
            pass

    def copy_from(self, batch):
        pass
'''
PYTHON_READY_MS = 120_000


@pytest.fixture
def judge_page(page, site):
    need_judge()
    return page


def wait_python(page) -> None:
    page.wait_for_function(
        "() => ['ready', 'unavailable'].includes(document.getElementById('python-status').dataset.state)",
        timeout=PYTHON_READY_MS)
    state = page.locator("#python-status")
    assert state.get_attribute("data-state") == "ready", state.inner_text()


def test_solve_a_cuda_graph_exercise(judge_page, site):
    page = judge_page
    page.goto(site("/"))
    page.select_option("#f-tag", "buffers")
    page.fill("#f-q", "copy_from")
    shown = page.locator(".exercise-item:not([hidden])")
    assert [li.get_attribute("data-id") for li in shown.all()] == [SLUG]
    page.click(f".exercise-item[data-id={SLUG}] a.ex-title")
    page.wait_for_selector(".cm-content[contenteditable=true]")
    assert "cuda-graph" in find_exercise(SLUG).chapter
    # the editor is usable at once; the page says what is loading behind it
    loading = page.locator("#python-status")
    assert loading.get_attribute("data-state") == "loading" and loading.inner_text().startswith("Python: loading")

    type_code(page, CORRECT)
    wait_python(page)
    page.keyboard.press("Control+Enter")  # Run, from the editor
    v = judged(page)
    assert v["run"] is True and v["status"] == "accepted", v
    assert v["total"] == 2 and all(t["visible"] and t["status"] == "pass" for t in v["tests"])
    assert page.locator(".verdict-status").inner_text() == "Visible tests passed · 2/2"  # not Accepted: a Run
    assert page.locator(".verdict-next").inner_text().startswith("Not accepted yet: Submit runs all")
    assert page.locator(".test-card.status-pass").count() == 2

    page.click("#submit-button")
    v = judged(page)
    assert v["run"] is False and v["status"] == "accepted", v
    assert v["total"] > 2 and any(not t["visible"] for t in v["tests"])
    assert page.locator(".verdict-status").inner_text() == "Accepted"
    assert page.locator(".ex-header [data-progress-for]").inner_text().endswith("solved")

    page.goto(site("/"))
    page.reload()
    assert page.locator(f"[data-progress-for={SLUG}]").inner_text().endswith("solved")
    page.select_option("#f-status", "solved")
    assert [li.get_attribute("data-id") for li in shown.all()] == [SLUG]


def test_a_wrong_solution_shows_the_failing_test_and_its_line(judge_page, site):
    page = judge_page
    page.goto(site(f"/exercises/{SLUG}"))
    page.wait_for_selector(".cm-content[contenteditable=true]")
    type_code(page, WRONG)
    wait_python(page)
    page.click("#run-button")
    v = judged(page)
    assert v["status"] == "wrong_answer", v
    card = page.locator(".test-card[data-test=test_example_copy_from_copies_every_input]")
    assert card.get_attribute("open") is not None
    message = card.locator(".test-message").inner_text()
    line = copy_check_line()
    assert re.search(r"buf\.positions\[:\d+\] must hold batch\.positions after copy_from", message), message
    assert f"tests.py, line {line}" in message
    card.locator("button.goto-test").click()
    assert "test-line-target" in page.locator(f"#tests-line-{line}").get_attribute("class")
    page.keyboard.press("Shift+Control+Enter")  # Submit, from the keyboard (focus is outside the editor)
    v = judged(page)
    assert v["run"] is False and v["status"] == "wrong_answer"
    assert page.locator(".ex-header [data-progress-for]").inner_text() == "tried"


def test_an_endless_loop_times_out_and_the_next_run_works(judge_page, site):
    page = judge_page
    page.goto(site(f"/exercises/{SLUG}"))
    page.wait_for_selector(".cm-content[contenteditable=true]")
    type_code(page, ENDLESS)
    wait_python(page)
    page.click("#run-button")
    limit = find_exercise(SLUG).test_time_limit
    v = judged(page, timeout_ms=int((limit + 30) * 1000))
    assert v["status"] == "timeout", v
    looped = page.locator(".test-card[data-test=test_example_set_batch_makes_views]")
    assert looped.locator(".test-status").inner_text().lower() == "timeout"
    assert page.locator(".verdict-status").inner_text() == "Time limit exceeded"
    type_code(page, CORRECT)
    assert editor_text(page).startswith("class GraphCaptureBuffer")
    page.click("#run-button")
    v = judged(page)
    assert v["status"] == "accepted", v


# the page's side of the kept snapshot (browser/js/worker.mjs): one entry, its bytes matching the sha256 beside them
SNAPSHOTS = "minisgl-judge-python-snapshot"
SNAPSHOT_JS = """async ([name, tamper]) => {
  const hex = async (b) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)),
                                      (x) => x.toString(16).padStart(2, "0")).join("");
  const cache = await caches.open(name);
  for (let i = 0; i < 600; i++) {  // saved while the packages load: wait for it
    const keys = await cache.keys();
    const r = keys.length === 1 && await cache.match(keys[0]);
    const bytes = r && new Uint8Array(await r.arrayBuffer());
    if (bytes && await hex(bytes) === r.headers.get("x-sha256")) {
      if (tamper === "foreign") bytes[20] ^= 0xff;  // another Pyodide build's id, with a matching sha256
      if (tamper) await cache.put(keys[0], new Response(bytes, {headers: {"x-sha256": await hex(bytes)}}));
      return bytes.length;
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return 0;
}"""


def boot_snapshot(page) -> str:
    """How the page's Python started (client.mjs's judge-ready mark): restored, made, or made after a refusal."""
    page.wait_for_function("() => performance.getEntriesByName('judge-ready').length", timeout=PYTHON_READY_MS)
    return page.evaluate("() => performance.getEntriesByName('judge-ready')[0].detail.snapshot")


def go_next(page) -> None:
    with page.expect_navigation():
        page.click("a[rel=next]")


def run_starter(page) -> None:
    page.click("#run-button")
    v = judged(page)
    assert v["mode"] == "browser" and v["status"] not in ("internal_error", "unavailable"), v


def test_the_next_exercise_page_restores_python_from_this_browser(judge_page, site):
    page = judge_page
    page.goto(site(f"/exercises/{SLUG}"))
    wait_python(page)
    assert boot_snapshot(page) == "made"
    assert page.evaluate(SNAPSHOT_JS, [SNAPSHOTS, None]) > 1_000_000, "no snapshot kept after the first page"

    go_next(page)  # the next exercise: Python restored from the snapshot, and it judges
    assert boot_snapshot(page) == "restored"
    run_starter(page)

    # a snapshot this runtime cannot take (another build's, its sha256 right) is refused by Pyodide: normal boot
    assert page.evaluate(SNAPSHOT_JS, [SNAPSHOTS, "foreign"])
    go_next(page)
    assert boot_snapshot(page).startswith("made (the kept snapshot was refused: Snapshot build id mismatch"), \
        boot_snapshot(page)
    run_starter(page)
    assert page.evaluate(SNAPSHOT_JS, [SNAPSHOTS, None]) > 1_000_000, "no good snapshot in place of the foreign one"


def copy_check_line() -> int:
    """The line of graph-capture-buffer's tests.py whose check a missing position copy fails."""
    from pathlib import Path

    tests = Path(__file__).resolve().parents[2] / "exercises" / "graph-capture-buffer" / "tests.py"
    return next(i for i, text in enumerate(tests.read_text().splitlines(), 1)
                if "assert" in text and "after copy_from" in text)

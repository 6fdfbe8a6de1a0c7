"""Screenshots of the practice site for docs/: the start of the exercise list (with "Continue"), an exercise page
with a failed verdict (judged in the browser), light and dark, at laptop and phone widths, and its first hint
revealed (laptop).

    python tools/site_screenshots.py [--out docs/screenshots]

Starts the site on 127.0.0.1 (a free port in 8200-8299), drives Debian's chromium with Playwright, and blocks
every other host. Needs the site's bundle (`make site`) and the browser judge's assets.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
SIZES = {"laptop": {"width": 1366, "height": 800}, "phone": {"width": 390, "height": 844}}
SLUG = "graph-capture-buffer"
# copy_from forgets positions: the visible example fails with its message and line
WRONG = '''class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.padded_size)
        batch.input_ids, batch.out_loc, batch.positions = self.input_ids[s], self.out_loc[s], self.positions[s]

    def copy_from(self, batch):
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc
'''



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from web import create_app

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server("127.0.0.1", 0, create_app(), threaded=True)  # a port the system picks
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    args.out.mkdir(parents=True, exist_ok=True)
    blocked: list[str] = []
    saved = {"minisgl-practice.v1." + SLUG: json.dumps({"code": WRONG, "savedAt": "2026-12-01T10:00:00.000Z",
                                                        "verdicts": [], "solved": False, "solvedAt": None})}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        for scheme in ("light", "dark"):
            for size, viewport in SIZES.items():
                ctx = browser.new_context(viewport=viewport, color_scheme=scheme)

                def route(r):
                    if r.request.url.startswith(base + "/"):
                        r.continue_()
                    else:
                        blocked.append(r.request.url)
                        r.abort()

                ctx.route("**/*", route)
                page = ctx.new_page()
                page.goto(base + "/")
                page.evaluate("s => { for (const [k, v] of Object.entries(s)) localStorage.setItem(k, v); }", saved)
                page.reload()
                page.screenshot(path=str(args.out / f"list-{scheme}-{size}.png"), full_page=True)
                page.goto(f"{base}/exercises/{SLUG}")
                page.wait_for_function("() => ['ready', 'unavailable'].includes("
                                       "document.getElementById('python-status').dataset.state)", timeout=180_000)
                status = page.locator("#python-status")
                if status.get_attribute("data-state") != "ready":
                    raise SystemExit(f"in-browser judging is unavailable: {status.inner_text()}")
                page.click("#run-button")
                page.wait_for_function("() => document.getElementById('verdict').dataset.status === 'wrong_answer'",
                                       timeout=120_000)
                page.locator(".test-card.status-fail button.goto-test").first.click()
                page.locator("#verdict").scroll_into_view_if_needed()
                page.screenshot(path=str(args.out / f"exercise-failed-{scheme}-{size}.png"), full_page=True)
                if size == "laptop":  # the first hint revealed, with the reference behind it
                    page.click("#show-hint")
                    page.wait_for_selector("#hint-list .hint:not([hidden])")
                    hints = page.locator("#hints")
                    hints.scroll_into_view_if_needed()
                    hints.screenshot(path=str(args.out / f"exercise-hint-{scheme}-{size}.png"))
                ctx.close()
                print(f"{scheme} {size}: list, exercise page (and its first hint) written to {args.out}")
        browser.close()
    server.shutdown()
    if blocked:
        print(f"the pages asked other hosts for: {blocked}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Helpers for the site's tests: a live server, a browser profile with other hosts blocked, axe-core, typing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import need
from web import STATIC

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "web" / "frontend"
AXE = FRONTEND / "node_modules" / "axe-core" / "axe.min.js"
BUNDLE = STATIC / "dist" / "exercise.js"
JUDGE_CLIENT = ROOT / "browser" / "js" / "client.mjs"  # the in-browser judge's client API (served at /judge/js/)
JUDGE_ASSETS = ROOT / ".cache" / "browser" / "site" / "manifest.json"  # built by browser/build.py
PORTS = range(8200, 8300)
LAPTOP = {"width": 1366, "height": 800}
PHONE = {"width": 390, "height": 844}
# a correct graph-capture-buffer, short enough to type by hand into the editor (the site's flows judge it)
BUFFER_SOLUTION = '''class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.padded_size)
        batch.input_ids, batch.out_loc, batch.positions = self.input_ids[s], self.out_loc[s], self.positions[s]

    def copy_from(self, batch):
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc
        self.positions[s] = batch.positions
'''


@dataclass
class LiveSite:
    url: str
    server: object

    def __call__(self, path: str = "/") -> str:
        return self.url + path


def axe_violations(page, impacts=("serious", "critical")) -> list[dict]:
    """axe-core (npm, pinned in web/frontend/package-lock.json) run on the page as it is now. It is loaded as a
    file of the page's own origin (answered by the test, never by the site), since the site's policy refuses
    inline scripts."""
    need(AXE.is_file(), f"axe-core is not installed ({AXE.relative_to(ROOT)}; run `make site`)")
    origin = re.match(r"https?://[^/]+", page.url).group(0)
    url = f"{origin}/__tests__/axe.min.js"
    page.route(url, lambda r: r.fulfill(path=AXE, content_type="text/javascript",
                                        headers={"Cross-Origin-Resource-Policy": "same-origin"}))
    page.add_script_tag(url=url)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "help": v["help"],
         "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"] if v["impact"] in impacts
    ]


def editor_text(page) -> str:
    return page.evaluate("() => window.minisglPractice.code()")


def _indent_here(page) -> int:
    """The indentation of the line with the cursor, as the screen shows it (the editor's active line)."""
    return page.evaluate("() => { const t = document.querySelector('.cm-activeLine')?.textContent ?? '';"
                         " return t.length - t.trimStart().length; }")


def type_code(page, code: str) -> None:
    """Type `code` into the editor with keystrokes, as a person would: select all, delete, then each line;
    after Enter the editor indents by itself, so the typist only corrects the indentation it chose."""
    content = page.locator(".cm-content")
    content.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    lines = code.rstrip("\n").split("\n")
    for i, line in enumerate(lines):
        stripped = line.lstrip(" ")
        want = len(line) - len(stripped)
        have = _indent_here(page)
        if stripped:
            while have > want:
                page.keyboard.press("Backspace")  # deletes one indent unit inside the indentation
                have = _indent_here(page)
            if have < want:
                page.keyboard.type(" " * (want - have))
            page.keyboard.type(stripped)
        if i < len(lines) - 1:
            page.keyboard.press("Enter")
    # closed brackets typed over their auto-inserted twins; nothing else may differ
    got = "\n".join(ln.rstrip() for ln in editor_text(page).split("\n"))
    want_text = "\n".join(ln.rstrip() for ln in lines)
    assert got == want_text, f"the editor holds\n{got}\nnot\n{want_text}"


def judged(page, timeout_ms: int = 120_000) -> dict:
    """Wait for the verdict on the page and return its stored form (the newest of the history)."""
    page.wait_for_function("() => !['pending', undefined].includes(document.getElementById('verdict').dataset.status)",
                           timeout=timeout_ms)
    return json.loads(page.evaluate("() => JSON.stringify(window.minisglPractice.lastVerdict())"))


def need_bundle() -> None:
    need(BUNDLE.is_file(), f"the editor bundle {BUNDLE.relative_to(ROOT)} is not built (run `make site`)")


def need_judge() -> None:
    need(JUDGE_CLIENT.is_file(), f"in-browser judging is not installed ({JUDGE_CLIENT.relative_to(ROOT)} is missing)")
    need(JUDGE_ASSETS.is_file(), f"the browser judge's assets are not built ({JUDGE_ASSETS.relative_to(ROOT)}: "
                                 "run `make browser`)")


# in every page before its own scripts: each Content-Security-Policy violation is handed to the test at once
CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (e) => window.__cspViolation({
  directive: e.effectiveDirective, blocked: e.blockedURI, document: e.documentURI,
  source: e.sourceFile, line: e.lineNumber, sample: e.sample}));
"""
CSP_WORDS = "Content Security Policy"  # in the console messages of pages and workers that report a refusal


@dataclass
class Guard:
    """What a page asked of other hosts (refused), the script errors it hit, and what the site's
    Content-Security-Policy refused (the page's securitypolicyviolation events, and console messages about the
    policy from the page and its workers)."""

    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    csp: list = field(default_factory=list)

    def clean(self) -> bool:
        return not (self.blocked or self.errors or self.csp)


def open_context(browser, site: LiveSite, guard: Guard, **kw):
    """A fresh browser profile in which every request to another host is refused and recorded, and every
    violation of the site's Content-Security-Policy is recorded."""
    ctx = browser.new_context(**{"viewport": LAPTOP, **kw})
    ctx.expose_function("__cspViolation", lambda v: guard.csp.append(v))
    ctx.add_init_script(CSP_LISTENER)
    ctx.on("console", lambda m: CSP_WORDS.lower() in m.text.lower() and guard.csp.append(f"console {m.type}: {m.text}"))

    def route(r):
        if r.request.url.startswith(site.url + "/") or r.request.url.startswith(("blob:", "data:")):
            r.continue_()
        else:
            guard.blocked.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    ctx.on("page", lambda pg: pg.on("pageerror", lambda e: guard.errors.append(str(e))))
    return ctx

"""Judging in the browser: how long a learner waits, in headless Chromium against the Flask site on 127.0.0.1.

    python benchmarks/browser.py [--exercise graph-capture-loop] [--runs 5]

Each run opens a fresh browser context (a cold HTTP cache) on the minimal judge page (/judge/), submits the
exercise's reference as soon as the page has loaded (the judge queues it until Python is ready), then submits
it again on the same page, then reloads the page (warm HTTP cache) and submits once more. Printed, median of
--runs (goals from issue 8):

    ready      page load (navigation start) -> worker ready
    first      page load -> first verdict                           goal <= 8 s
    second     second verdict of the same exercise, same page       goal <= 1 s
    reload     page reload (warm HTTP cache) -> first verdict       goal <= 4 s

and what each is made of: the worker's boot steps (runtime: pyodide.asm.wasm compile + Python start; packages:
numpy, minisgl, judge, the layer; data; imports) and the judging itself (the verdict's own ms).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from browser import build as browser_build  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
GOALS = {"first": 8.0, "second": 1.0, "reload": 4.0}

# runs in the page: submit at once, resolve with the verdict's timing and the worker's boot report
SUBMIT = """async ([slug]) => {
  const t = performance.now();
  const [r, ready] = await Promise.all([window.judge.judge(slug, null), window.judge.ready]);
  return {start: t, end: performance.now(), status: r.verdict.status, judge_ms: r.verdict.ms,
          ready_at: performance.getEntriesByName("judge-ready")[0]?.startTime ?? null, boot: ready.env.timings,
          boot_ms: ready.ms};
}"""


def serve(site: Path, port: int):
    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from web import create_app

    srv = make_server("127.0.0.1", port, create_app({"BROWSER_SITE": str(site)}), threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def one_run(playwright, chromium: str, base: str, slug: str) -> dict:
    # a fresh profile per run: a cold HTTP cache (and code cache) on disk, as a learner's first visit
    with tempfile.TemporaryDirectory(prefix="judge-bench-profile-") as profile:
        context = playwright.chromium.launch_persistent_context(profile, executable_path=chromium, args=ARGS)
        try:
            return _measure(context, base, slug)
        finally:
            context.close()


def _measure(context, base: str, slug: str) -> dict:
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(base + "/judge/", wait_until="domcontentloaded")
    page.wait_for_function("window.judge !== undefined")
    first = page.evaluate(SUBMIT, [slug])
    second = page.evaluate(SUBMIT, [slug])
    page.reload(wait_until="domcontentloaded")
    page.wait_for_function("window.judge !== undefined")
    reload = page.evaluate(SUBMIT, [slug])
    for r in (first, second, reload):
        assert r["status"] == "accepted", r
    return {
        "ready": first["ready_at"] / 1000, "first": first["end"] / 1000,
        "second": (second["end"] - second["start"]) / 1000, "reload": reload["end"] / 1000,
        "reload_ready": reload["ready_at"] / 1000,
        "boot_cold": first["boot"], "boot_warm": reload["boot"],
        "judge_first_ms": first["judge_ms"], "judge_second_ms": second["judge_ms"],
        "judge_reload_ms": reload["judge_ms"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exercise", default="graph-capture-loop")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--port", type=int, default=8150)
    ap.add_argument("--json", action="store_true", help="print the raw runs as JSON too")
    args = ap.parse_args()
    chromium = shutil.which("chromium")
    if not chromium:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    site = browser_build.build(quiet=True).parent
    from playwright.sync_api import sync_playwright

    srv = serve(site, args.port)
    runs = []
    try:
        with sync_playwright() as p:
            for i in range(args.runs):
                runs.append(one_run(p, chromium, f"http://127.0.0.1:{args.port}", args.exercise))
                r = runs[-1]
                print(f"run {i + 1}: ready {r['ready']:.2f} s, first {r['first']:.2f} s, second {r['second']:.2f} s, "
                      f"reload {r['reload']:.2f} s", flush=True)
    finally:
        srv.shutdown()
    med = {k: statistics.median(r[k] for r in runs) for k in ("ready", "first", "second", "reload", "reload_ready")}
    steps = sorted(runs[0]["boot_cold"])
    boot_cold = {s: statistics.median(r["boot_cold"][s] for r in runs) / 1000 for s in steps}
    boot_warm = {s: statistics.median(r["boot_warm"][s] for r in runs) / 1000 for s in steps}
    judge = {k: statistics.median(r[k] for r in runs) / 1000
             for k in ("judge_first_ms", "judge_second_ms", "judge_reload_ms")}
    print(f"\nheadless Chromium, {args.exercise} (reference, Submit), median of {len(runs)}:")
    print(f"  page load -> worker ready         {med['ready']:6.2f} s")
    for key, label in (("first", "page load -> first verdict"), ("second", "second verdict, same page"),
                       ("reload", "reload (warm cache) -> verdict")):
        ok = "ok" if med[key] <= GOALS[key] else "OVER"
        print(f"  {label:<33}{med[key]:6.2f} s   goal <= {GOALS[key]:g} s  {ok}")
    print("  boot steps, cold cache: " + ", ".join(f"{s} {v:.2f} s" for s, v in boot_cold.items()))
    print("  boot steps, warm cache: " + ", ".join(f"{s} {v:.2f} s" for s, v in boot_warm.items()))
    print(f"  judging itself (verdict ms): first {judge['judge_first_ms']:.2f} s, "
          f"second {judge['judge_second_ms']:.2f} s, after reload {judge['judge_reload_ms']:.2f} s; "
          f"reload -> ready {med['reload_ready']:.2f} s")
    if args.json:
        print(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

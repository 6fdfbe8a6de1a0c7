"""Judging in the browser: how long a learner waits, in headless Chromium against the Flask site on 127.0.0.1.

    python benchmarks/browser.py [--exercise graph-capture-loop] [--runs 5] [--baseline e365c1e | --no-baseline]

Each run opens a fresh browser profile (a cold HTTP cache) on the minimal judge page (/judge/), submits the
exercise's reference as soon as the page has loaded (the judge queues it until Python is ready), then submits
it again on the same page, then reloads the page (warm HTTP cache) and submits once more. Then, in another fresh
profile, the real exercise pages: /exercises/<page>, Run (the starter) at once, and its "next" link, Run at
once there too. Printed, median of --runs (goals from issues 8 and 22):

    ready      page load (navigation start) -> worker ready
    first      page load -> first verdict                           goal <= 8 s
    second     second verdict of the same exercise, same page       goal <= 1 s
    reload     page reload (warm HTTP cache) -> first verdict       goal <= 4 s
    page A     exercise page, cold profile: load -> ready, -> first verdict (Run)
    page B     the next exercise page (its link): load -> ready, -> first verdict     goal: ready sooner than A

and what each is made of: the worker's boot steps (runtime: pyodide.asm.wasm compile + Python start, or its
restore from this browser's snapshot; packages: numpy, minisgl, judge, the layer; data; imports) and the judging
itself (the verdict's own ms).

The same runs, interleaved, on a baseline: the commit --baseline checked out into a temporary git worktree (its
own page scripts built there, the same built assets), served on --port + 1; the ratios this / baseline are
printed. The machine is noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
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


# runs in an exercise page: click Run as soon as the page's script is there; resolve when the verdict is shown
RUN_PAGE = """async () => {
  while (!window.minisglPractice) await new Promise((r) => setTimeout(r, 5));
  document.getElementById("run-button").click();
  const box = document.getElementById("verdict");
  while (["pending", undefined].includes(box.dataset.status)) await new Promise((r) => setTimeout(r, 5));
  const end = performance.now();
  while (!performance.getEntriesByName("judge-ready").length) await new Promise((r) => setTimeout(r, 5));
  const mark = performance.getEntriesByName("judge-ready")[0];
  return {end, status: box.dataset.status, ready_at: mark.startTime, boot: mark.detail || null};
}"""


def serve(site: Path, port: int):
    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from web import create_app

    srv = make_server("127.0.0.1", port, create_app({"BROWSER_SITE": str(site)}), threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def one_run(playwright, chromium: str, base: str, slug: str, page_slug: str) -> dict:
    # a fresh profile per measure: a cold HTTP cache (and code cache, and storage) on disk, as a learner's first visit
    out = {}
    for measure, ex in ((_measure, slug), (_measure_pages, page_slug)):
        with tempfile.TemporaryDirectory(prefix="judge-bench-profile-") as profile:
            context = playwright.chromium.launch_persistent_context(profile, executable_path=chromium, args=ARGS)
            try:
                out.update(measure(context, base, ex))
            finally:
                context.close()
    return out


def _measure_pages(context, base: str, slug: str) -> dict:
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.goto(base + f"/exercises/{slug}", wait_until="domcontentloaded")
    a = page.evaluate(RUN_PAGE)
    with page.expect_navigation(wait_until="domcontentloaded"):
        page.click("a[rel=next]")
    b = page.evaluate(RUN_PAGE)
    for r in (a, b):
        assert r["status"] not in ("unavailable", "internal_error"), r
    return {"page_a_ready": a["ready_at"] / 1000, "page_a_first": a["end"] / 1000,
            "page_b_ready": b["ready_at"] / 1000, "page_b_first": b["end"] / 1000,
            "page_b_boot": b["boot"]}


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


def baseline_site(commit: str, tmp: Path, site: Path, port: int):
    """The baseline commit in a git worktree under tmp, its page scripts built, serving `site` on port."""
    base = tmp / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), commit], cwd=REPO, check=True)
    (base / "web/frontend/node_modules").symlink_to((REPO / "web/frontend/node_modules").resolve())
    subprocess.run(["npm", "run", "--prefix", "web/frontend", "--silent", "build"], cwd=base, check=True)
    code = ("import sys, time; from pathlib import Path; sys.path.insert(0, '.'); "
            "from benchmarks.browser import serve; "
            f"serve(Path({str(site)!r}), {port}); print('up', flush=True); time.sleep(1e9)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=base, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "up":
        raise SystemExit("the baseline site did not start")
    return base, proc


KEYS = ("ready", "first", "second", "reload", "reload_ready", "page_a_ready", "page_a_first", "page_b_ready",
        "page_b_first")


def report(name: str, runs: list[dict], exercise: str) -> dict:
    med = {k: statistics.median(r[k] for r in runs) for k in KEYS}
    steps = sorted(runs[0]["boot_cold"])
    boot_cold = {s: statistics.median(r["boot_cold"][s] for r in runs) / 1000 for s in steps}
    steps = sorted(runs[0]["boot_warm"])
    boot_warm = {s: statistics.median(r["boot_warm"][s] for r in runs) / 1000 for s in steps}
    judge = {k: statistics.median(r[k] for r in runs) / 1000
             for k in ("judge_first_ms", "judge_second_ms", "judge_reload_ms")}
    print(f"\n{name}: headless Chromium, {exercise} (reference, Submit; exercise pages: Run), median of {len(runs)}:")
    print(f"  page load -> worker ready         {med['ready']:6.2f} s")
    for key, label in (("first", "page load -> first verdict"), ("second", "second verdict, same page"),
                       ("reload", "reload (warm cache) -> verdict")):
        ok = "ok" if med[key] <= GOALS[key] else "OVER"
        print(f"  {label:<33}{med[key]:6.2f} s   goal <= {GOALS[key]:g} s  {ok}")
    print(f"  exercise page A -> ready          {med['page_a_ready']:6.2f} s   "
          f"-> first verdict {med['page_a_first']:6.2f} s")
    ok = "ok" if med["page_b_ready"] < med["page_a_ready"] else "NOT SOONER"
    print(f"  next exercise page B -> ready     {med['page_b_ready']:6.2f} s   "
          f"-> first verdict {med['page_b_first']:6.2f} s"
          f"   goal: ready sooner than A  {ok}")
    print("  boot steps, cold cache: " + ", ".join(f"{s} {v:.2f} s" for s, v in boot_cold.items()))
    print("  boot steps, warm cache: " + ", ".join(f"{s} {v:.2f} s" for s, v in boot_warm.items()))
    print(f"  judging itself (verdict ms): first {judge['judge_first_ms']:.2f} s, "
          f"second {judge['judge_second_ms']:.2f} s, after reload {judge['judge_reload_ms']:.2f} s; "
          f"reload -> ready {med['reload_ready']:.2f} s")
    print(f"  next page's boot: {runs[-1]['page_b_boot']}")
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exercise", default="graph-capture-loop")
    ap.add_argument("--page", default="graph-capture-buffer", help="exercise page A (it needs a next exercise)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--port", type=int, default=8150)
    ap.add_argument("--baseline", default="e365c1e", help="the commit to compare with (today's main)")
    ap.add_argument("--no-baseline", action="store_true", help="measure this checkout alone")
    ap.add_argument("--json", action="store_true", help="print the raw runs as JSON too")
    args = ap.parse_args()
    chromium = shutil.which("chromium")
    if not chromium:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    site = browser_build.build(quiet=True).parent
    from playwright.sync_api import sync_playwright

    srv = serve(site, args.port)
    sites = {"this": f"http://127.0.0.1:{args.port}"}
    runs: dict[str, list[dict]] = {"this": []}
    with tempfile.TemporaryDirectory(prefix="judge-bench-baseline-") as tmp:
        base = proc = None
        try:
            if not args.no_baseline:
                base, proc = baseline_site(args.baseline, Path(tmp), site, args.port + 1)
                sites["baseline"] = f"http://127.0.0.1:{args.port + 1}"
                runs["baseline"] = []
            with sync_playwright() as p:
                for i in range(args.runs):
                    for name, url in sites.items():  # interleaved: the same load for both
                        runs[name].append(one_run(p, chromium, url, args.exercise, args.page))
                        r = runs[name][-1]
                        print(f"run {i + 1} {name}: ready {r['ready']:.2f} s, first {r['first']:.2f} s, "
                              f"second {r['second']:.2f} s, reload {r['reload']:.2f} s, page A ready "
                              f"{r['page_a_ready']:.2f} s, page B ready {r['page_b_ready']:.2f} s "
                              f"(first verdict {r['page_b_first']:.2f} s)", flush=True)
        finally:
            srv.shutdown()
            if proc:
                proc.kill()
                proc.wait()
            if base:
                subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO, check=False)
    meds = {name: report(name, rs, args.exercise) for name, rs in runs.items()}
    if "baseline" in meds:
        print(f"\nthis / baseline ({args.baseline}), medians:")
        for key in KEYS:
            print(f"  {key:<14}{meds['this'][key]:6.2f} s / {meds['baseline'][key]:6.2f} s = "
                  f"{meds['this'][key] / meds['baseline'][key]:5.2f}")
    if args.json:
        print(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

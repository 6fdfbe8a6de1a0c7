"""Screenshots of running a course for docs/deploy.md: an assignment's staff page with an extension, the
gradebook for that assignment, the similarity report and one pair side by side, and a learner's list page
with their assignments (light, laptop width).

    python tools/course_screenshots.py [--out docs/screenshots]

Seeds a fresh SQLite database in a temporary folder (a staff member, twelve learners in two groups, two
assignments, submissions with their timings, one learner's solution copied and renamed by another and one
copy of the reference), runs the similarity comparison once, starts the site on 127.0.0.1 (a port the system
picks) and drives Debian's chromium with Playwright, every other host blocked.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import random
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1366, "height": 800}
LEARNERS = ["ada", "bob", "cy", "dee", "eli", "fay", "gus", "hal", "ivy", "jo", "kim", "lou"]
WEEK1 = ["req-lengths", "sampling-params-validate", "cache-allocate", "kv-pool-and-rows"]
WEEK2 = ["graph-bs-list", "graph-capture-buffer"]
PASSWORD = "course-screens-1"
T0 = dt.datetime(2026, 11, 23, 9, 0)


def _renamed(code: str) -> str:
    """A learner's copy of another's solution: a few names changed, the comments gone."""
    code = re.sub(r"#.*", "", code)
    for a, b in (("self", "me"), ("batch", "b"), ("pages", "pg"), ("result", "out")):
        code = re.sub(rf"\b{a}\b", b, code)
    return code


def seed(url: str) -> dict:
    from judge.exercise import find_exercise
    from judge.solution import reference_source
    from web import auth
    from web import db as dbm
    from web.deadlines import record_timings
    from web.models import DONE, Assignment, AssignmentItem, Extension, Submission, User

    dbm.upgrade(url)
    db = dbm.open_database(url)
    auth.create_user(db, "prof", PASSWORD, staff=True)
    for name in LEARNERS:
        auth.create_user(db, name, PASSWORD)
    rng = random.Random(21)
    alternatives = sorted((ROOT / "exercises" / "req-lengths" / "alternatives").glob("*.py"))
    ada_code = alternatives[0].read_text(encoding="utf-8")
    reference = reference_source(find_exercise("req-lengths"))
    with db.session() as s:
        users = {u.username: u for u in s.query(User).all()}
        for i, name in enumerate(LEARNERS):
            users[name].group_name = "Section A" if i % 2 == 0 else "Section B"
        week1 = Assignment(name="Week 1: requests and the KV cache", opens_at=T0, due_at=T0 + dt.timedelta(days=8),
                           late_until=T0 + dt.timedelta(days=10),
                           items=[AssignmentItem(exercise=e, position=i) for i, e in enumerate(WEEK1)])
        week2 = Assignment(name="Week 2: CUDA graphs", opens_at=T0 + dt.timedelta(days=7),
                           due_at=T0 + dt.timedelta(days=22),
                           items=[AssignmentItem(exercise=e, position=i) for i, e in enumerate(WEEK2)])
        s.add_all([week1, week2])
        s.flush()
        s.add(Extension(assignment_id=week1.id, user_id=users["bob"].id, due_at=T0 + dt.timedelta(days=11),
                        granted_by="prof"))
        s.flush()
        for name in LEARNERS:
            for ex in WEEK1 + WEEK2:
                planted = ex == "req-lengths" and name in ("ada", "eli", "kim")  # the copies the report finds
                if rng.random() < 0.2 and not planted:
                    continue
                tries = rng.randint(1, 3)
                accepted = rng.random() < 0.8 or planted
                for k in range(tries):
                    last = k == tries - 1
                    result = "accepted" if (accepted and last) else rng.choice(["wrong_answer", "runtime_error"])
                    day = rng.uniform(1, 9.5) + k * 0.2
                    code = f"# {name}'s {ex}, try {k + 1}\n"
                    if ex == "req-lengths" and result == "accepted":
                        code = {"ada": ada_code, "eli": _renamed(ada_code), "kim": reference}.get(name, code)
                    verdict = {"status": result, "passed": 9 if result == "accepted" else 6, "total": 9,
                               "message": "", "tests": []}
                    sub = Submission(user_id=users[name].id, exercise=ex, mode="cpu", code=code, state=DONE,
                                     result=result, verdict=json.dumps(verdict), created_at=T0 + dt.timedelta(days=day),
                                     finished_at=T0 + dt.timedelta(days=day, seconds=20))
                    s.add(sub)
                    s.flush()
                    record_timings(s, sub)
        ids = {"week1": week1.id}
    from web.similarity import process_pending

    while process_pending(db, None, limit=100):
        pass
    db.dispose()
    return ids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from web import create_app

    folder = Path(tempfile.mkdtemp(prefix="course-screens-"))
    url = f"sqlite:///{folder / 'course.sqlite3'}"
    ids = seed(url)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = create_app({"DATABASE_URL": url, "SESSION_COOKIE_SECURE": False, "SIMILARITY_SECONDS": 0,
                      "REAPER_SECONDS": 0, "SECRET_KEY": "course-screenshots"})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    args.out.mkdir(parents=True, exist_ok=True)
    blocked: list[str] = []

    def route(r):
        if r.request.url.startswith(base + "/"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    def login(ctx, name: str):
        page = ctx.new_page()
        page.goto(base + "/login")
        page.fill("#username", name)
        page.fill("#password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(base + "/")
        return page

    def shot(page, path: str, name: str, full: bool = True):
        page.goto(base + path)
        page.screenshot(path=str(args.out / f"{name}-light-laptop.png"), full_page=full)
        print(f"{name}: {path}")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        ctx = browser.new_context(viewport=VIEWPORT, color_scheme="light")
        ctx.route("**/*", route)
        staff = login(ctx, "prof")
        shot(staff, f"/staff/assignments/{ids['week1']}", "course-assignment")
        shot(staff, f"/staff/gradebook?assignment={ids['week1']}", "course-gradebook")
        shot(staff, "/staff/similarity?exercise=req-lengths", "course-similarity")
        staff.goto(base + "/staff/similarity?exercise=req-lengths")
        top = staff.locator("table a:text-is('compare')").first.get_attribute("href")
        shot(staff, top, "course-similarity-pair")
        ctx.close()
        ctx = browser.new_context(viewport=VIEWPORT, color_scheme="light")
        ctx.route("**/*", route)
        learner = login(ctx, "bob")
        learner.locator("#your-assignments").scroll_into_view_if_needed()
        learner.screenshot(path=str(args.out / "course-learner-list-light-laptop.png"))
        print("course-learner-list: / as bob")
        ctx.close()
        browser.close()
    server.shutdown()
    shutil.rmtree(folder, ignore_errors=True)
    if blocked:
        print(f"the pages asked other hosts for: {blocked}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

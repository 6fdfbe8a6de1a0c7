#!/usr/bin/env python3
"""The grading server's benchmark, on PostgreSQL (a cluster started here) and on SQLite, with the site under
gunicorn on 127.0.0.1 (4 gthread workers x 128 threads: an SSE stream holds a thread) and runners as HTTP
clients (no judging: the queue's own costs). Prints, per database:

- claims per second with 8 concurrent runners (each claim followed by its result, 400 jobs);
- the median overhead from submit to claimed (a runner long-polling), and from result posted to the
  learner seeing it over SSE (30 of each);
- 200 SSE watchers held at once while their 200 submissions go through 8 runners: every watcher sees its
  verdict; jobs per second with the watchers, against the same run without them.

    python benchmarks/server.py [--only sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.server.pieces import PgCluster, Site, fresh_database, have_postgres  # noqa: E402
from tests.server.sse import Stream, watch  # noqa: E402

VERDICT = {"status": "accepted", "tests": [{"name": "test_x", "status": "pass"}]}
ENV = {"MINISGL_PRACTICE_RATE_LIMIT": "1000000", "MINISGL_PRACTICE_QUEUE_CAP": "1000000",
       "MINISGL_PRACTICE_MAX_QUEUED_PER_USER": "1000000",
       "MINISGL_PRACTICE_POLL_SECONDS": "0.05"}


class World:
    def __init__(self, url: str, folder: Path):
        from web import auth
        from web.db import open_database

        self.db = open_database(url)
        auth.create_user(self.db, "bench", "bench-password")
        self.token = auth.create_api_token(self.db, "bench")
        self.runner_tokens = [auth.create_runner(self.db, f"r{i}") for i in range(8)]
        self.site = Site(url, folder, workers=4, threads=128, env=ENV).start()
        self.learner = requests.Session()
        self.learner.headers["Authorization"] = f"Bearer {self.token}"

    def submit(self, code: str = "x = 1") -> dict:
        r = self.learner.post(f"{self.site.url}/api/v1/submissions", timeout=30,
                              json={"exercise": "graph-capture-loop", "code": code, "mode": "gpu"})
        r.raise_for_status()
        return r.json()

    def runner(self, i: int) -> requests.Session:
        s = requests.Session()
        s.headers["Authorization"] = f"Bearer {self.runner_tokens[i]}"
        return s

    def claim(self, s: requests.Session, wait: float = 0) -> dict | None:
        r = s.post(f"{self.site.url}/api/v1/runner/claim", json={"modes": ["gpu"], "wait": wait}, timeout=wait + 30)
        return None if r.status_code == 204 else r.json()["job"]

    def result(self, s: requests.Session, job: dict) -> None:
        r = s.post(f"{self.site.url}/api/v1/runner/jobs/{job['id']}/result", timeout=30,
                   json={"lease_id": job["lease_id"], "verdict": VERDICT})
        assert r.json() == {"stored": True}, r.text

    def close(self) -> None:
        self.site.kill()
        self.db.dispose()


def drain(world: World, n_runners: int = 8) -> tuple[int, float]:
    """8 runners claim and post until the queue is empty: (jobs, seconds)."""
    done = [0] * n_runners
    barrier = threading.Barrier(n_runners + 1)

    def run(i: int) -> None:
        s = world.runner(i)
        barrier.wait()
        while (job := world.claim(s)) is not None:
            world.result(s, job)
            done[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_runners)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return sum(done), time.perf_counter() - t0


def claims_per_second(world: World, jobs: int = 400) -> float:
    for i in range(jobs):
        world.submit(f"x = {i}")
    n, s = drain(world)
    assert n == jobs
    return n / s


def submit_to_claimed(world: World, reps: int = 30) -> float:
    s = world.runner(0)
    out = []
    for _ in range(reps):
        got: dict = {}

        def poll():
            got["job"] = world.claim(s, wait=10)
            got["t"] = time.perf_counter()

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.3)  # the runner is waiting in its long-poll
        t0 = time.perf_counter()
        world.submit()
        t.join()
        out.append(got["t"] - t0)
        world.result(s, got["job"])
    return statistics.median(out)


def result_to_sse(world: World, reps: int = 30) -> float:
    s = world.runner(0)
    out = []
    for _ in range(reps):
        sub = world.submit()
        job = world.claim(s)
        stream = Stream()
        t = threading.Thread(target=watch, args=(world.site.url + sub["links"]["events"], world.token, 60, stream))
        t.start()
        while not any(e.name == "running" for e in stream.events):
            time.sleep(0.01)
        t0 = time.monotonic()
        world.result(s, job)
        t.join()
        out.append(stream.events[-1].at - t0)
    return statistics.median(out)


def watchers(world: World, n: int = 200) -> tuple[int, float, float]:
    """n watchers held while their n jobs go through: (watchers that saw done, jobs/s with, jobs/s without)."""
    for i in range(n):
        world.submit(f"baseline = {i}")
    base_n, base_s = drain(world)
    subs = [world.submit(f"watched = {i}") for i in range(n)]
    streams = [Stream() for _ in subs]
    sessions = [requests.Session() for _ in subs]
    threads = [threading.Thread(target=watch, args=(world.site.url + sub["links"]["events"], world.token, 300, st, se))
               for sub, st, se in zip(subs, streams, sessions)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    while sum(1 for st in streams if st.events) < n:  # every watcher is connected (it has its queued event)
        if time.monotonic() - t0 > 60:
            raise RuntimeError(f"only {sum(1 for st in streams if st.events)} of {n} watchers connected")
        time.sleep(0.05)
    got, secs = drain(world)
    for t in threads:
        t.join(120)
    seen = sum(1 for st in streams if st.events and st.events[-1].name == "done")
    assert got == n
    return seen, got / secs, base_n / base_s


def run(kind: str, pg: PgCluster | None) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
    url = fresh_database(kind, pg, folder)
    world = World(url, folder)
    try:
        out = {"claims_per_s": claims_per_second(world)}
        out["submit_to_claimed_ms"] = submit_to_claimed(world) * 1000
        out["result_to_sse_ms"] = result_to_sse(world) * 1000
        seen, with_w, without = watchers(world)
        out.update(watchers_done=seen, jobs_per_s_with_200_watchers=with_w, jobs_per_s_without=without)
        return out
    finally:
        world.close()
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["sqlite", "postgresql"])
    args = ap.parse_args(argv)
    kinds = [args.only] if args.only else ["postgresql", "sqlite"]
    pg = PgCluster().start() if "postgresql" in kinds and have_postgres() else None
    results = {}
    try:
        for kind in kinds:
            if kind == "postgresql" and pg is None:
                print("postgresql: skipped (initdb/pg_ctl not installed)")
                continue
            results[kind] = run(kind, pg)
    finally:
        if pg:
            pg.destroy()
    rows = [("claims per second, 8 concurrent runners (claim + result)", "claims_per_s", "{:.0f}"),
            ("median submit -> claimed (runner long-polling)", "submit_to_claimed_ms", "{:.1f} ms"),
            ("median result posted -> seen over SSE", "result_to_sse_ms", "{:.1f} ms"),
            ("SSE watchers held that saw their verdict (of 200)", "watchers_done", "{}"),
            ("jobs per second with 200 watchers held", "jobs_per_s_with_200_watchers", "{:.0f}"),
            ("jobs per second without watchers", "jobs_per_s_without", "{:.0f}")]
    print(f"\n{'':58}" + "".join(f"{k:>14}" for k in results))
    for label, key, fmt in rows:
        print(f"{label:58}" + "".join(f"{fmt.format(r[key]):>14}" for r in results.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The grading server's benchmark, on PostgreSQL (a cluster started here) and on SQLite, with the site under
gunicorn on 127.0.0.1 as deployed (4 gevent workers: an SSE stream is a greenlet, not a thread) and runners as
HTTP clients (no judging: the queue's own costs, or a fixed time per job). Prints, per database:

- claims per second with 8 concurrent runners (each claim followed by its result, 400 jobs);
- the median overhead from submit to claimed (a runner long-polling), and from result posted to the
  learner seeing it over SSE (30 of each);
- under load: 300 SSE streams from 30 learners (10 each) held open while their 200 submissions are judged by
  8 runners (``--judge-ms`` per job): every watcher sees its verdict; a learner opening one stream more than
  the cap (``STREAMS_PER_USER``, 10 here) gets 429 JSON; meanwhile another process probes ``/api/v1/grading``
  and an exercise page every 100 ms: the max and p99 of their latencies while the streams were open.

    python benchmarks/server.py [--only sqlite|postgresql] [--load-only] [--judge-ms 300]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
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
LEARNERS, STREAMS_EACH, LOAD_JOBS = 30, 10, 200
OPEN_PER_S = 30  # the load's streams are opened at this rate
ENV = {"MINISGL_PRACTICE_RATE_LIMIT": "1000000", "MINISGL_PRACTICE_QUEUE_CAP": "1000000",
       "MINISGL_PRACTICE_MAX_QUEUED_PER_USER": "1000000",
       "MINISGL_PRACTICE_POLL_SECONDS": "0.05", "MINISGL_PRACTICE_STREAMS_PER_USER": str(STREAMS_EACH)}
EXERCISE_PAGE = "/exercises/graph-capture-loop"


class World:
    def __init__(self, url: str, folder: Path):
        from web import auth
        from web.db import open_database

        self.db = open_database(url)
        auth.create_user(self.db, "bench", "bench-password")
        self.token = auth.create_api_token(self.db, "bench")
        self.learners = []
        for i in range(LEARNERS):
            auth.create_user(self.db, f"learner{i}", "bench-password")
            self.learners.append(auth.create_api_token(self.db, f"learner{i}"))
        self.runner_tokens = [auth.create_runner(self.db, f"r{i}") for i in range(8)]
        self.site = Site(url, folder, workers=4, env=ENV).start()
        self.learner = requests.Session()
        self.learner.headers["Authorization"] = f"Bearer {self.token}"

    def submit(self, code: str = "x = 1", token: str | None = None) -> dict:
        r = self.learner.post(f"{self.site.url}/api/v1/submissions", timeout=30,
                              headers={"Authorization": f"Bearer {token}"} if token else None,
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


def drain(world: World, n_runners: int = 8, judge_s: float = 0.0) -> tuple[int, float]:
    """8 runners claim and post (each job taking ``judge_s``) until the queue is empty: (jobs, seconds)."""
    done = [0] * n_runners
    barrier = threading.Barrier(n_runners + 1)

    def run(i: int) -> None:
        s = world.runner(i)
        barrier.wait()
        while (job := world.claim(s)) is not None:
            time.sleep(judge_s)
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


def _probe(url: str, start: multiprocessing.Event, stop: multiprocessing.Event, out: multiprocessing.Queue) -> None:
    """Another process (the benchmark's own threads do not slow it): every 100 ms, GET the grading status and an
    exercise page; put [(kind, started at time.monotonic(), seconds)] on ``out`` when told to stop."""
    http = requests.Session()
    got = []
    for _ in range(5 * 4):  # warm: each of the 4 workers renders the page once before (a cold one takes ~0.5 s)
        for path in ("/api/v1/grading", EXERCISE_PAGE):
            requests.get(url + path, timeout=30, headers={"Connection": "close"})
    start.wait()
    while not stop.is_set():
        tick = time.monotonic()
        for kind, path in (("grading", "/api/v1/grading"), ("page", EXERCISE_PAGE)):
            t0 = time.monotonic()
            try:
                ok = http.get(url + path, timeout=10).status_code == 200
            except requests.RequestException:
                ok = False
            got.append((kind, t0, time.monotonic() - t0 if ok else float("inf")))
        time.sleep(max(0.0, 0.1 - (time.monotonic() - tick)))
    out.put(got)


def p99(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


def load(world: World, judge_s: float) -> dict:
    """300 streams of 30 learners held while 200 jobs are judged; probes of the site meanwhile (see the top)."""
    ctx = multiprocessing.get_context("fork")  # before this process starts threads of its own
    start, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    prober = ctx.Process(target=_probe, args=(world.site.url, start, stop, out), daemon=True)
    prober.start()  # it warms the site up meanwhile
    subs: list[list[dict]] = [[] for _ in range(LEARNERS)]
    for i in range(LOAD_JOBS):
        subs[i % LEARNERS].append(world.submit(f"load = {i}", world.learners[i % LEARNERS]))
    watched = [(world.learners[i], subs[i][k % len(subs[i])]) for k in range(STREAMS_EACH) for i in range(LEARNERS)]
    streams = [Stream() for _ in watched]
    threads = [threading.Thread(target=watch, args=(world.site.url + sub["links"]["events"], tok, 600, st),
                                kwargs={"chunk_size": 65536, "read_timeout": 120}, daemon=True)
               for (tok, sub), st in zip(watched, streams)]
    start.set()
    t_open = time.monotonic()
    for t in threads:  # opened at OPEN_PER_S (a class arriving, not one burst), learner after learner
        t.start()
        time.sleep(1 / OPEN_PER_S)
    while sum(1 for st in streams if st.events) < len(streams):  # every watcher has its first event
        if time.monotonic() - t_open > 180:
            raise RuntimeError(f"only {sum(1 for st in streams if st.events)} of {len(streams)} watchers connected")
        time.sleep(0.05)
    connected_s = time.monotonic() - t_open
    over = requests.get(world.site.url + subs[0][0]["links"]["events"], timeout=30,
                        headers={"Authorization": f"Bearer {world.learners[0]}"})
    refused = over.status_code == 429 and over.headers.get("Content-Type", "").startswith("application/json") \
        and over.json()["error"]["code"] == "too_many_streams" and "Retry-After" in over.headers
    got, secs = drain(world, judge_s=judge_s)
    for t in threads:
        t.join(120)
    t_done = time.monotonic()
    stop.set()
    probes = out.get(timeout=60)
    prober.join(30)
    held = [(kind, lat) for kind, t0, lat in probes if t_open <= t0 <= t_done]
    lat = {k: [x for kind, x in held if kind == k] for k in ("grading", "page")}
    seen = sum(1 for st in streams if st.events and st.events[-1].name == "done")
    assert got == LOAD_JOBS
    return {"load_avg": os.getloadavg()[0],
            "load_watchers_done": seen, "load_over_cap_429": "yes" if refused else f"NO ({over.status_code})",
            "load_connected_s": connected_s, "load_held_s": t_done - t_open, "load_jobs_per_s": got / secs,
            "load_probes": len(held) // 2, **{f"load_{k}_{f.__name__}_ms": f(v) * 1000 for k, v in lat.items()
                                          for f in (max, p99)}}


def run(kind: str, pg: PgCluster | None, load_only: bool = False, judge_s: float = 0.3) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"bench-{kind}-"))
    url = fresh_database(kind, pg, folder)
    world = World(url, folder)
    try:
        out = {}
        if not load_only:
            out["claims_per_s"] = claims_per_second(world)
            out["submit_to_claimed_ms"] = submit_to_claimed(world) * 1000
            out["result_to_sse_ms"] = result_to_sse(world) * 1000
        out.update(load(world, judge_s))
        return out
    finally:
        world.close()
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["sqlite", "postgresql"])
    ap.add_argument("--load-only", action="store_true", help="only the load part (300 streams, 200 jobs)")
    ap.add_argument("--judge-ms", type=float, default=300.0, help="the time a runner takes per job under load")
    args = ap.parse_args(argv)
    kinds = [args.only] if args.only else ["postgresql", "sqlite"]
    pg = PgCluster().start() if "postgresql" in kinds and have_postgres() else None
    results = {}
    try:
        for kind in kinds:
            if kind == "postgresql" and pg is None:
                print("postgresql: skipped (initdb/pg_ctl not installed)")
                continue
            results[kind] = run(kind, pg, args.load_only, args.judge_ms / 1000)
    finally:
        if pg:
            pg.destroy()
    rows = [("claims per second, 8 concurrent runners (claim + result)", "claims_per_s", "{:.0f}"),
            ("median submit -> claimed (runner long-polling)", "submit_to_claimed_ms", "{:.1f} ms"),
            ("median result posted -> seen over SSE", "result_to_sse_ms", "{:.1f} ms"),
            (f"load: watchers that saw their verdict (of {LEARNERS * STREAMS_EACH})", "load_watchers_done", "{}"),
            ("load: a learner over the stream cap got 429 JSON", "load_over_cap_429", "{}"),
            ("load: seconds until every stream had its first event", "load_connected_s", "{:.1f} s"),
            (f"load: seconds the streams were held ({LOAD_JOBS} jobs)", "load_held_s", "{:.1f} s"),
            ("load: jobs per second (8 runners)", "load_jobs_per_s", "{:.1f}"),
            ("load: probes of each kind meanwhile (every 100 ms)", "load_probes", "{}"),
            ("load: the machine's load average (1 min) at the end", "load_avg", "{:.1f}"),
            ("load: /api/v1/grading latency, max", "load_grading_max_ms", "{:.0f} ms"),
            ("load: /api/v1/grading latency, p99", "load_grading_p99_ms", "{:.0f} ms"),
            ("load: exercise page latency, max", "load_page_max_ms", "{:.0f} ms"),
            ("load: exercise page latency, p99", "load_page_p99_ms", "{:.0f} ms")]
    print(f"\n{'':58}" + "".join(f"{k:>14}" for k in results))
    for label, key, fmt in rows:
        if any(key in r for r in results.values()):
            print(f"{label:58}" + "".join(f"{fmt.format(r[key]) if key in r else '-':>14}" for r in results.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Faults, each a test, with the real pieces: runners killed with SIGKILL (mid-job, and at random across
100 jobs), the site killed and restarted mid-queue, a result posted twice, a stale lease, 8 runners
claiming at once, the database unreachable for a while."""

from __future__ import annotations

import random
import signal
import threading
import time

import requests

from tests.server.pieces import EX, World, fresh_database, reference_code, wait_for


class NonceWatch:
    """Polls the database; remembers the first verdict seen for each job: a later different one would mean
    a result stored twice."""

    def __init__(self, world: World):
        self.world, self.first, self.changed = world, {}, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.wait(0.1):
            try:
                rows = self.world.rows()
            except Exception:  # noqa: BLE001 - the database may be away in some tests
                continue
            for sid, row in rows.items():
                if row.verdict:
                    msg = row.verdict_dict()["message"]
                    if self.first.setdefault(sid, msg) != msg:
                        self.changed.append((sid, self.first[sid], msg))

    def close(self):
        self.stop.set()
        self.thread.join()


def test_a_runner_killed_mid_job_is_replaced_and_the_job_completes(pg, world_factory, tmp_path):
    w = world_factory(fresh_database("postgresql", pg, tmp_path), runners=2)
    sid = w.submit(reference_code(EX))
    a = w.runner(0, tmp_path, executor="local")
    wait_for(lambda: w.rows()[sid].state == "running", 60, "runner A to claim the job")
    time.sleep(0.2)  # the claim is committed, and a judging takes seconds: A is mid-job on any machine
    a.kill()
    assert w.rows()[sid].state == "running"
    b = w.runner(1, tmp_path, executor="local")
    try:
        row = wait_for(lambda: (r := w.rows()[sid]).state == "done" and r, 120, "the job to be judged again")
    finally:
        b.signal(signal.SIGTERM)
        b.wait(60)
    assert (row.result, row.attempts, row.runner.name) == ("accepted", 2, "r1"), row.verdict
    assert row.verdict_dict()["passed"] >= 6
    assert "-> accepted" in b.log_text() and "-> " not in a.log_text()


def test_100_jobs_with_random_runner_kills_lose_nothing_and_store_nothing_twice(backend, db_url, world_factory,
                                                                                 tmp_path):
    w = world_factory(db_url, runners=4, workers=3)
    codes = {w.submit(f"job = {i}"): f"job = {i}" for i in range(100)}
    watch = NonceWatch(w)
    runners = [w.runner(i, tmp_path) for i in range(4)]
    kills = 0
    rng = random.Random(1234)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            rows = w.rows()
            if all(r.state == "done" for r in rows.values()):
                break
            time.sleep(rng.uniform(0.3, 0.8))
            i = rng.randrange(4)
            runners[i].kill()  # SIGKILL, whatever it was doing
            kills += 1
            runners[i] = w.runner(i, tmp_path)
    finally:
        for r in runners:
            r.kill()
        watch.close()
    rows = w.rows()
    assert kills >= 5
    assert sorted(rows) == sorted(codes) and all(r.state == "done" for r in rows.values()), \
        [(r.id, r.state) for r in rows.values() if r.state != "done"]
    assert all(r.result == "accepted" for r in rows.values())
    for sid, row in rows.items():  # each result belongs to its own job
        assert row.verdict_dict()["message"].split("|")[0] == codes[sid]
    assert watch.changed == []  # no result was replaced by a second one
    assert sum(r.attempts for r in rows.values()) >= 100


def test_the_site_restarted_mid_queue_loses_nothing(backend, db_url, world_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("SLEEPY_MIN", "0.2")
    monkeypatch.setenv("SLEEPY_MAX", "0.4")
    w = world_factory(db_url, runners=2)
    codes = {w.submit(f"job = {i}"): f"job = {i}" for i in range(30)}
    watch = NonceWatch(w)
    runners = [w.runner(i, tmp_path) for i in range(2)]
    try:
        wait_for(lambda: sum(r.state == "done" for r in w.rows().values()) >= 5, 60, "a few jobs done")
        w.site.kill()  # SIGKILL the whole gunicorn
        time.sleep(2.0)
        w.site.start()
        wait_for(lambda: all(r.state == "done" for r in w.rows().values()), 120, "every job done")
        assert all(r.proc.poll() is None for r in runners)  # the runners rode it out
    finally:
        for r in runners:
            r.kill()
        watch.close()
    rows = w.rows()
    assert sorted(rows) == sorted(codes) and all(r.result == "accepted" for r in rows.values())
    assert watch.changed == []
    assert any("not answering" in r.log_text() for r in runners)


def _claim(site, token, wait=0):
    return requests.post(f"{site.url}/api/v1/runner/claim", json={"modes": ["gpu", "cpu"], "wait": wait},
                         headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _result(site, token, job, status="accepted"):
    return requests.post(f"{site.url}/api/v1/runner/jobs/{job['id']}/result",
                         headers={"Authorization": f"Bearer {token}"},
                         json={"lease_id": job["lease_id"], "verdict": {
                             "status": status, "tests": [{"name": "test_t", "status": "pass" if status == "accepted"
                                                          else "fail"}]}}, timeout=30)


def test_a_result_posted_twice_is_stored_once_and_a_stale_lease_is_refused(pg, world_factory, tmp_path):
    w = world_factory(fresh_database("postgresql", pg, tmp_path), runners=2)
    sid = w.submit("x = 1")
    old = _claim(w.site, w.runner_tokens[0]).json()["job"]
    wait_for(lambda: w.rows()[sid].state == "queued", 30, "the reaper to requeue the job of the expired 2 s lease")
    new = _claim(w.site, w.runner_tokens[1], wait=5).json()["job"]
    assert new["id"] == sid and new["lease_id"] != old["lease_id"] and new["attempt"] == 2
    stale = _result(w.site, w.runner_tokens[0], old, "wrong_answer")
    assert (stale.status_code, stale.json()["error"]["reason"]) == (409, "lease_expired")
    assert _result(w.site, w.runner_tokens[1], new).json() == {"stored": True}
    assert _result(w.site, w.runner_tokens[1], new, "wrong_answer").json() == {"stored": False}
    row = w.rows()[sid]
    assert (row.state, row.result, row.runner.name) == ("done", "accepted", "r1")


def test_8_runners_claiming_at_once_never_get_the_same_job(backend, db_url, world_factory):
    w = world_factory(db_url, runners=8, workers=4)
    ids = {w.submit(f"x = {i}") for i in range(160)}
    barrier = threading.Barrier(8)
    claimed: list[list[int]] = [[] for _ in range(8)]
    errors: list[str] = []

    def run(i):
        s = requests.Session()
        s.headers["Authorization"] = f"Bearer {w.runner_tokens[i]}"
        barrier.wait()
        while True:
            r = s.post(f"{w.site.url}/api/v1/runner/claim", json={"modes": ["gpu"], "wait": 0}, timeout=30)
            if r.status_code == 204:
                return
            if r.status_code != 200:
                errors.append(f"{r.status_code} {r.text[:200]}")
                return
            job = r.json()["job"]
            claimed[i].append(job["id"])
            verdict = {"status": "accepted", "tests": [{"name": "test_t", "status": "pass"}]}
            res = s.post(f"{w.site.url}/api/v1/runner/jobs/{job['id']}/result", timeout=30,
                         json={"lease_id": job["lease_id"], "verdict": verdict})
            if res.json() != {"stored": True}:
                errors.append(res.text)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    flat = [j for c in claimed for j in c]
    assert not errors, errors[:3]
    assert len(flat) == len(set(flat)) == len(ids) and set(flat) == ids
    assert sum(1 for c in claimed if c) >= 4  # they really competed
    assert all(r.attempts == 1 and r.state == "done" for r in w.rows().values())


def test_the_database_unreachable_for_a_while_and_everything_recovers(pg, world_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("SLEEPY_MIN", "0.3")
    monkeypatch.setenv("SLEEPY_MAX", "0.5")
    w = world_factory(fresh_database("postgresql", pg, tmp_path), runners=1)
    first = [w.submit(f"a = {i}") for i in range(5)]
    runner = w.runner(0, tmp_path)
    try:
        wait_for(lambda: w.rows()[first[0]].state == "done", 60, "the first job")
        pg.stop("fast")
        try:
            def unavailable():
                r = requests.get(f"{w.site.url}/api/v1/submissions/{first[0]}",
                                 headers={"Authorization": f"Bearer {w.token}"}, timeout=30)
                return [r] if r.status_code == 503 else None  # in a list: a Response with status 503 is falsy

            [r] = wait_for(unavailable, 30, "the site to answer 503 while the database is away")
            assert r.status_code == 503 and r.json()["error"]["code"] == "database_unavailable"
            assert int(r.headers["Retry-After"]) > 0
            r = requests.post(f"{w.site.url}/api/v1/submissions", json={"exercise": EX, "code": "b", "mode": "gpu"},
                              headers={"Authorization": f"Bearer {w.token}"}, timeout=30)
            assert r.status_code == 503 and r.json()["error"]["code"] == "database_unavailable"
            time.sleep(4.0)
        finally:
            pg.start()
        later = wait_for(lambda: _try_submit(w), 30, "the site to take submissions again")
        wait_for(lambda: all(r.state == "done" for r in w.rows().values()), 60, "every job done")
        assert runner.proc.poll() is None
    finally:
        runner.kill()
    rows = w.rows()
    assert all(rows[i].result == "accepted" for i in first + [later])
    log = runner.log_text()
    assert "not answering" in log  # it retried through the outage instead of giving up


def _try_submit(w: World) -> int | None:
    try:
        return w.submit("c = 1")
    except (AssertionError, requests.RequestException):
        return None

"""The runner's loop: one thread per slot (a GPU, or a CPU slot) claims a job, judges it while a heartbeat
keeps its lease, and posts the verdict. One job per slot at once.

Stopping (SIGTERM or SIGINT): no more claims; the jobs in hand are finished and their verdicts posted
(each is bounded by its exercise's time limit). A second signal, or ``grace_s`` running out, cancels them
and hands them back to the queue unjudged (another runner takes them, no attempt lost).

Every job ends with one log line: job id, exercise, mode, attempt, the outcome, times, slot.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .client import LeaseLost, ResultRefused, ServerClient, Unauthorized
from .executors import Executor, JobResult, Slot

log = logging.getLogger("runner")


@dataclass
class Service:
    client: ServerClient
    executor: Executor
    slots: list[Slot]
    claim_wait: float = 10.0
    grace_s: float | None = None
    max_jobs: int | None = None  # stop after this many jobs (tests, one-shot checks)
    stopping: threading.Event = field(default_factory=threading.Event)
    hard_stop: threading.Event = field(default_factory=threading.Event)
    exit_code: int = 0
    jobs_done: int = 0
    _in_hand: dict[int, threading.Event] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install_signals(self) -> None:
        def on_signal(signum, _frame):
            self.request_stop(signal.Signals(signum).name)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    def request_stop(self, why: str = "stop") -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            self.client.stop.set()
            with self._lock:
                n = len(self._in_hand)
            log.info("%s: stopping; finishing %d job(s) in hand (signal again to hand them back now)", why, n)
            if self.grace_s is not None:
                threading.Timer(self.grace_s, self._hand_back_all, args=("grace period over",)).start()
        else:
            self._hand_back_all(why)

    def _hand_back_all(self, why: str) -> None:
        self.hard_stop.set()
        with self._lock:
            cancels = list(self._in_hand.values())
        if cancels:
            log.info("%s: handing back %d job(s) in hand", why, len(cancels))
        for c in cancels:
            c.set()

    def run(self) -> int:
        self.executor.prepare()
        names = ", ".join(f"{s.name}({s.gpu_name or 'cpu'})" for s in self.slots)
        log.info("runner up: executor=%s slots=[%s] server=%s", self.executor.kind, names, self.client.base)
        threads = [threading.Thread(target=self._slot_loop, args=(s,), name=f"slot-{s.name}", daemon=True)
                   for s in self.slots]
        for t in threads:
            t.start()
        try:
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(timeout=0.2)
        finally:
            self.executor.close()
        log.info("runner stopped after %d job(s)", self.jobs_done)
        return self.exit_code

    def _slot_loop(self, slot: Slot) -> None:
        modes = self.executor.modes(slot)
        retrying = [False]

        def on_retry(why: str) -> None:
            if not retrying[0]:
                log.warning("slot %s: the server is not answering (%s); retrying", slot.name, why)
                retrying[0] = True

        while not self.stopping.is_set():
            try:
                job = self.client.claim(modes, slot.gpu_name, self.claim_wait, on_retry=on_retry)
            except ConnectionError:
                continue  # stopping
            except Unauthorized as e:
                log.error("the server refused this runner's token: %s", e)
                self.exit_code = 3
                self.request_stop("unauthorized")
                return
            if retrying[0]:
                log.info("slot %s: the server is back", slot.name)
                retrying[0] = False
            if job is None:
                continue
            if self.stopping.is_set():
                self._release(job, "stopping")
                continue
            self._handle(job, slot)
            with self._lock:
                self.jobs_done += 1
                if self.max_jobs is not None and self.jobs_done >= self.max_jobs:
                    self.request_stop("max jobs")

    def _release(self, job: dict[str, Any], why: str, failed: bool = False) -> None:
        try:
            self.client.release(job["id"], job["lease_id"], failed=failed, message=why)
            log.info("job %s handed back (%s)", job["id"], why)
        except (LeaseLost, ConnectionError) as e:
            log.info("job %s not handed back (%s): the reaper will requeue it", job["id"], e)

    def _handle(self, job: dict[str, Any], slot: Slot) -> None:
        t0 = time.monotonic()
        cancel = threading.Event()
        done = threading.Event()
        lost: list[str] = []
        with self._lock:
            self._in_hand[job["id"]] = cancel
        if self.hard_stop.is_set():
            cancel.set()

        def beat() -> None:
            interval = max(0.5, float(job.get("lease_seconds", 60)) / 3)
            while not done.wait(interval):
                try:
                    self.client.heartbeat(job["id"], job["lease_id"])
                except LeaseLost as e:
                    lost.append(e.reason)
                    cancel.set()
                    return
                except Exception:  # noqa: BLE001 - the server is away: the lease may still hold, keep trying
                    continue

        hb = threading.Thread(target=beat, name=f"heartbeat-{job['id']}", daemon=True)
        hb.start()
        try:
            try:
                outcome = self.executor.judge(job, slot, cancel)
            except Exception as e:  # noqa: BLE001 - an executor bug must not take the slot down
                log.exception("job %s: the executor failed", job["id"])
                outcome = JobResult(None, handback=True, reason=f"executor failed: {type(e).__name__}: {e}")
            judged_s = time.monotonic() - t0
            prefix = (f"job {job['id']} exercise={job.get('exercise')} mode={job.get('mode')} "
                      f"attempt={job.get('attempt')} slot={slot.name}")
            if lost:
                log.info("%s -> dropped: lease lost (%s) after %.1f s", prefix, lost[0], judged_s)
                return
            if outcome.handback:
                self._release(job, outcome.reason, failed=outcome.reason != "cancelled")
                if outcome.reason != "cancelled":
                    log.warning("%s -> handed back: %s", prefix, outcome.reason)
                    time.sleep(2.0)  # the sandbox failed: do not spin through the queue
                return
            v = outcome.verdict or {}
            retry_for = max(2 * float(job.get("lease_seconds", 60)), 60.0)
            warned = []

            def on_retry(why: str) -> None:
                if not warned:
                    warned.append(why)
                    log.warning("job %s: the server is not answering (%s); retrying the result", job["id"], why)

            try:
                self.client.result(job["id"], job["lease_id"], v, outcome.judged_on, retry_for=retry_for,
                                   on_retry=on_retry)
                tail = " (emulated GPU)" if outcome.judged_on.get("emulated") else ""
                log.info("%s -> %s %s/%s passed, judged in %.1f s, posted in %.1f s%s", prefix, v.get("status"),
                         v.get("passed"), v.get("total"), judged_s, time.monotonic() - t0 - judged_s, tail)
            except LeaseLost as e:
                log.info("%s -> %s, but the result was refused: lease %s", prefix, v.get("status"), e.reason)
            except ResultRefused as e:  # a verdict the site will never take: hand the job back, the attempt counted
                log.warning("%s -> %s, but the site refused the verdict (%s); handing the job back", prefix,
                            v.get("status"), e)
                self._release(job, f"verdict refused: {e}", failed=True)
            except (ConnectionError, Unauthorized) as e:
                log.warning("%s -> %s, but the result could not be delivered: %s", prefix, v.get("status"), e)
        finally:
            done.set()
            hb.join(timeout=5)
            with self._lock:
                self._in_hand.pop(job["id"], None)

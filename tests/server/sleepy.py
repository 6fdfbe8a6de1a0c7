"""A test executor for the queue's fault tests: it judges nothing, it sleeps a while and answers a verdict
that names the job's code and this execution (a nonce), so a test can tell which execution's result was
stored; with ``SLEEPY_STARTED`` set to a folder, it first touches a file named after the job there, so a
test knows the runner holds the job (a row marked running only says the server answered the claim).
A job whose code says ``bad-verdict`` gets a verdict outside the schema (``"metrics": [1]``), one that says
``nan-verdict`` a metric that is NaN (not JSON at all): what a broken runner would post.
``python -m runner --executor tests.server.sleepy:SleepyExecutor`` (the repository on PYTHONPATH).

The judging itself is tested with the real executors elsewhere; the subject here is the queue: leases,
kills, restarts, retries.
"""

from __future__ import annotations

import math
import os
import random
import threading
import uuid
from pathlib import Path

from runner.executors import Executor, JobResult, Slot


class SleepyExecutor(Executor):
    kind = "sleepy"

    def __init__(self, **kw):
        kw = {k: v for k, v in kw.items() if k in ("emulate_gpu", "memory_mb", "cpus")}
        super().__init__(**{**kw, "emulate_gpu": True})
        self.lo = float(os.environ.get("SLEEPY_MIN", "0.05"))
        self.hi = float(os.environ.get("SLEEPY_MAX", "0.3"))

    def judge(self, job, slot: Slot, cancel: threading.Event) -> JobResult:
        if started := os.environ.get("SLEEPY_STARTED"):
            (Path(started) / str(job["id"])).touch()
        if cancel.wait(random.uniform(self.lo, self.hi)):
            return JobResult(None, self.judged_on(job, slot), handback=True, reason="cancelled")
        verdict = {"status": "accepted", "exercise": job["exercise"], "mode": "local",
                   "message": f"{job['code']}|{uuid.uuid4().hex}",
                   "tests": [{"name": "test_sleep", "status": "pass"}]}
        if "bad-verdict" in job["code"]:
            verdict["metrics"] = [1]
        if "nan-verdict" in job["code"]:
            verdict["metrics"] = {"decode_ms": math.nan}
        return JobResult(verdict, self.judged_on(job, slot))

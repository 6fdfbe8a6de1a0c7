"""Isolation: every judging in a fresh child process, with wall-clock and memory limits.

Used by the command line and by the GPU runner (inside its container). The child
(``python -m judge.child``) runs the in-process core and streams JSON events over a pipe that only
the parent reads; the learner's stdout/stderr go to a file that is never parsed. So:

- an endless loop is killed at the per-test (or per-run) deadline: ``timeout``;
- ``os._exit``, a segfault, or being killed: ``runtime_error`` ("the process exited without a verdict");
- a huge allocation fails against RLIMIT_AS inside the child: ``runtime_error`` (out of memory);
- printing a verdict-looking JSON does nothing.

The parent imports no torch: it stays light and fast.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from .exercise import REPO_ROOT, Exercise
from .verdict import MESSAGE_CAP, Env, TestResult, Verdict, cap

# RLIMIT_AS for the child. Measured on the CPU build of torch 2.13 with one thread: a whole judging of
# a CUDA Graph exercise peaks at about 0.6 GiB of address space (0.24 GiB resident), most of it
# `import torch`. 4 GiB leaves ample room (more threads, bigger tests) while a runaway allocation
# fails at once. CUDA reserves huge virtual ranges (its driver cannot start under
# such a limit), so where an NVIDIA device is present, or in gpu mode, no RLIMIT_AS is set: there
# the runner's container (its cgroup memory limit) bounds memory.
DEFAULT_MEMORY_MB = 4096


def nvidia_device_present() -> bool:
    """Cheap, without importing torch: is there an NVIDIA device node?"""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


@dataclass
class Limits:
    run_s: float = 60.0  # one whole judging, process start included
    test_s: float = 20.0  # one test
    memory_mb: int | None = DEFAULT_MEMORY_MB
    start_s: float = 60.0  # the child's start (imports) before the first job
    threads: int = 1  # OMP_NUM_THREADS of the child

    @classmethod
    def for_exercise(cls, exercise: Exercise, mode: str = "local") -> Limits:
        mem = exercise.memory_limit_mb or DEFAULT_MEMORY_MB
        return cls(
            run_s=exercise.time_limit,
            test_s=exercise.test_time_limit,
            memory_mb=None if mode == "gpu" or nvidia_device_present() else mem,
        )


@dataclass
class Job:
    exercise: Exercise
    source: str | None  # None: the reference solution (computed in the child)
    filename: str = "submission.py"
    mode: str = "local"
    run_only: bool = False
    seed: int | None = None  # the judging's seed for hidden inputs (None: drawn in the child)

    def to_request(self) -> dict:
        return {
            "exercise": str(self.exercise.path),
            "source": self.source,
            "filename": self.filename,
            "mode": self.mode,
            "run_only": self.run_only,
            "seed": self.seed,
        }


@dataclass
class _JobState:
    job: Job
    started: float = 0.0
    loading: bool = False  # the learner's code may have run
    load_started: float = 0.0
    planned: bool = False  # the submission loaded and the tests are known
    plan: list[str] = field(default_factory=list)
    results: list[TestResult] = field(default_factory=list)
    current: str | None = None
    current_started: float = 0.0
    verdict: Verdict | None = None


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def _tail(path: str, n: int = 1500) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _partial(state: _JobState, status: str, message: str, current_status: str, current_msg: str,
             wall_ms: float) -> Verdict:
    """A verdict built by the parent from what the child reported before it died or was killed."""
    v = Verdict(status=status, exercise=state.job.exercise.slug, mode=state.job.mode, run=state.job.run_only)
    v.env = Env(python=".".join(map(str, sys.version_info[:3])))
    v.message = cap(message, MESSAGE_CAP)
    done = {t.name for t in state.results}
    v.tests = list(state.results)
    if state.current and state.current not in done:
        v.tests.append(TestResult(
            name=state.current, status=current_status, message=current_msg,
            ms=round((time.monotonic() - state.current_started) * 1000, 1),
            visible=state.current.startswith("test_example"),
        ))
        done.add(state.current)
    for name in state.plan:
        if name not in done:
            v.tests.append(TestResult(name=name, status="skip", message="Not run: an earlier test ended the run.",
                                      visible=name.startswith("test_example")))
    v.ms = round(wall_ms, 1)
    return v.finalize()


def _run_child(jobs: list[Job], limits: Limits, extra_sys_path: list[str]) -> tuple[list[Verdict], int]:
    """Run jobs in one child until it finishes or dies. Returns the verdicts obtained (the last one
    may be a partial verdict for the job that killed it) and how many jobs were consumed."""
    r, w = os.pipe()
    err = tempfile.NamedTemporaryFile(prefix="judge-child-", suffix=".log", delete=False)
    err.close()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["PYTHONUNBUFFERED"] = "1"
    # one intra-op thread: the tests run a tiny model, and an OpenMP pool on a busy machine (several
    # judgings at once, or any other load) turns milliseconds into seconds while its threads wait
    # for each other
    env["OMP_NUM_THREADS"] = str(limits.threads)
    cmd = [sys.executable, "-m", "judge.child", "--fd", str(w)]
    if limits.memory_mb:
        cmd += ["--memory-mb", str(limits.memory_mb)]
    t_spawn = time.monotonic()
    with open(err.name, "wb") as errf:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=errf, stderr=errf, pass_fds=(w,), cwd=str(REPO_ROOT),
            env=env, start_new_session=True,
        )
    os.close(w)
    request = {"jobs": [j.to_request() for j in jobs], "sys_path": extra_sys_path}
    verdicts: list[Verdict] = []
    state: _JobState | None = None
    buf = b""
    sel = selectors.DefaultSelector()
    sel.register(r, selectors.EVENT_READ)
    outcome: tuple[str, str] | None = None  # (kind, message) when the child ends badly
    fatal: str | None = None
    try:
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        ready = False
        eof = False
        while not eof:
            now = time.monotonic()
            if not ready:
                deadline, why = t_spawn + limits.start_s, "start"
            elif state is None:
                deadline, why = now + limits.start_s, "start"
            else:
                deadline, why = state.started + limits.run_s, "run"
                if state.current is not None and state.current_started + limits.test_s < deadline:
                    deadline, why = state.current_started + limits.test_s, "test"
                elif state.loading and not state.planned and state.load_started + limits.test_s < deadline:
                    deadline, why = state.load_started + limits.test_s, "load"
            timeout = deadline - now
            if timeout <= 0:
                outcome = ("timeout", why)
                break
            events = sel.select(timeout=min(timeout, 1.0))
            if not events:
                if proc.poll() is not None and not _readable(r):
                    eof = True
                continue
            chunk = os.read(r, 65536)
            if not chunk:
                eof = True
                continue
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                kind = ev.get("event")
                if kind == "ready":
                    ready = True
                elif kind == "job":
                    state = _JobState(job=jobs[len(verdicts)], started=time.monotonic() if verdicts else t_spawn)
                elif kind == "load" and state is not None:
                    state.loading, state.load_started = True, time.monotonic()
                elif kind == "plan" and state is not None:
                    state.plan = [str(n) for n in ev.get("tests", [])]
                    state.planned = True
                elif kind == "test_start" and state is not None:
                    state.current, state.current_started = str(ev.get("name")), time.monotonic()
                elif kind == "test_end" and state is not None:
                    state.results.append(TestResult.from_dict(ev["test"]))
                    state.current = None
                elif kind == "verdict" and state is not None:
                    v = Verdict.from_dict(ev["verdict"])
                    v.ms = round((time.monotonic() - state.started) * 1000, 1)
                    verdicts.append(v.finalize())
                    state = None
                elif kind == "fatal":
                    fatal = str(ev.get("message"))
    finally:
        sel.close()
        if proc.poll() is None and outcome is not None:
            _kill(proc)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.wait()
        os.close(r)
    rc = proc.returncode
    log = _tail(err.name)
    try:
        os.unlink(err.name)
    except OSError:
        pass

    if state is None and len(verdicts) == len(jobs):
        return verdicts, len(jobs)

    # the child ended (or was ended) in the middle of a job: build that job's verdict here
    if state is None:
        state = _JobState(job=jobs[len(verdicts)], started=t_spawn)
    wall = (time.monotonic() - state.started) * 1000
    if outcome is not None:
        kind, why = outcome
        if why == "test":
            msg = (f"Test {state.current} ran past its time limit of {limits.test_s:g} s (an endless loop?) "
                   "and was stopped.")
            v = _partial(state, "timeout", msg, "timeout", msg, wall)
        elif why == "load" or why == "run" and state.loading and not state.planned:
            lim = limits.test_s if why == "load" else limits.run_s
            msg = (f"Your file's module-level code ran past the time limit of {lim:g} s and was stopped "
                   "(an endless loop?).")
            v = _partial(state, "timeout", msg, "timeout", msg, wall)
        elif why == "run":
            msg = f"The run went past its time limit of {limits.run_s:g} s and was stopped."
            v = _partial(state, "timeout", msg, "timeout", msg, wall)
        else:
            v = _partial(state, "internal_error",
                         f"The judge's process did not start within {limits.start_s:g} s (not your fault)."
                         f"\n{log[-600:]}",
                         "error", "", wall)
        return verdicts + [v], len(verdicts) + 1

    if not state.loading:  # nothing of the learner's ran yet: ours
        detail = fatal or (f"exit code {rc}" if rc is not None and rc >= 0 else _signal_name(rc or 0))
        v = _partial(state, "internal_error", f"The judge's process failed before your code ran (not your fault): "
                     f"{detail}\n{log[-800:]}", "error", "", wall)
        return verdicts + [v], len(verdicts) + 1

    if rc is not None and rc < 0:
        sig = _signal_name(rc)
        if sig == "SIGKILL":
            how = f"was killed ({sig}): most likely it ran out of memory"
        elif sig == "SIGSEGV":
            how = f"crashed with a segmentation fault ({sig})"
        else:
            how = f"was ended by {sig}"
        msg = f"The process running your code {how}, before it could report a verdict."
    else:
        msg = (f"The process running your code exited (exit code {rc}) before it could report a verdict: "
               "did your code call os._exit() or close the judge's channel?")
    if fatal:
        msg += f"\n({fatal})"
    if log:
        msg += "\nLast output of the process:\n" + log[-800:]
    where = state.current
    v = _partial(state, "runtime_error", msg, "error", msg if where else "", wall)
    return verdicts + [v], len(verdicts) + 1


def _readable(fd: int) -> bool:
    sel = selectors.DefaultSelector()
    try:
        sel.register(fd, selectors.EVENT_READ)
        return bool(sel.select(timeout=0))
    finally:
        sel.close()


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def judge_batch(jobs: list[Job], limits: Limits | None = None,
                extra_sys_path: list[str] | None = None) -> list[Verdict]:
    """Judge several submissions, each in a clean binding, in as few child processes as possible: a job
    that kills its child (timeout, crash) gets its verdict from the parent and the rest go to a new child."""
    out: list[Verdict] = []
    rest = list(jobs)
    while rest:
        lim = limits or Limits.for_exercise(rest[0].exercise, rest[0].mode)
        verdicts, used = _run_child(rest, lim, list(extra_sys_path or []))
        out.extend(verdicts)
        rest = rest[used:]
    return out


def judge_isolated(exercise: Exercise, source: str | None, *, filename: str = "submission.py", mode: str = "local",
                   run_only: bool = False, limits: Limits | None = None,
                   extra_sys_path: list[str] | None = None, seed: int | None = None) -> Verdict:
    """Judge one submission in a fresh child process (``source=None``: the reference solution)."""
    job = Job(exercise, source, filename=filename, mode=mode, run_only=run_only, seed=seed)
    return judge_batch([job], limits or Limits.for_exercise(exercise, mode), extra_sys_path)[0]

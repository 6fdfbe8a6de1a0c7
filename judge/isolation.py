"""Isolation: every judging in a fresh process, with walls, limits and absolute deadlines.

``judge_isolated`` is the layer's one entry: a list of ``Judging``s in, an ``Outcome`` (the verdict and
the observations of its checks) per judging out. Used by the command line, by the trusted referee (for
both of its processes) and by the GPU runner's job process; process control is ``judge.sandbox``'s. The
child (``judge.child``) imports torch and the engine once and judges each job in a fork of itself (on a
CPU; where CUDA is initialised, one job per child), running the in-process core and streaming JSON
events, each with its job's token, over a pipe that only the parent reads; the learner's stdout/stderr go
to a file that is never parsed. What holds, locally:

- nothing of one judging reaches the next: its memory (modules, patched functions, builtins) dies with
  its fork, what it left running is killed, its files are removed, and events without the current job's
  token are dropped;

- the child's interpreter ignores the environment (``python -I -S``: no ``PYTHONOPTIMIZE``, no
  ``sitecustomize``), and the tests' checks are calls, so asserts hold whatever the shell says;
- its working directory and temporary folder are private to it and removed afterwards;
- every process it started is gone when its verdict is out: it runs in its own PID namespace where the
  kernel allows one (when the child ends, the kernel ends everything in it); elsewhere its process
  group is killed, and orphans it left (re-parented to this process, a subreaper) are found by a marker
  in their environment and killed;
- deadlines are absolute: the child's start, each job (``run_s``), each test (``test_s``), the
  module-level code of a submission, and the exit after the last verdict;
- a timeout, ``os._exit``, a crash or being killed gets a verdict built here from what the child had
  reported: never silence, and never ``internal_error`` once the learner's code has run.

The parent imports no torch: it stays light and fast.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from . import sandbox
from .child import BOOT
from .exercise import REPO_ROOT, Exercise
from .verdict import MESSAGE_CAP, Env, TestResult, Trust, Verdict, cap

# RLIMIT_AS for the child. Measured on the CPU build of torch 2.13 with one thread: a whole judging of
# a CUDA Graph exercise peaks at about 0.6 GiB of address space (0.24 GiB resident), most of it
# `import torch`. 4 GiB leaves ample room while a runaway allocation fails at once. CUDA reserves huge
# virtual ranges (its driver cannot start under such a limit), so where an NVIDIA device is present, or
# in gpu mode, no RLIMIT_AS is set: there the runner's container (its cgroup memory limit) bounds memory.
DEFAULT_MEMORY_MB = 4096
MARKER = "MINISGL_JUDGE_CHILD"  # in the environment of every child: finds the orphans it leaves
MAX_EVENT_BYTES = 32 << 20  # a longer line on the event pipe ends the child (it floods the parent)
MAX_CHECKS = 50_000  # observations kept per test


def nvidia_device_present() -> bool:
    """Cheap, without importing torch: is there an NVIDIA device node?"""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


@dataclass
class Limits:
    run_s: float = 60.0  # one whole judging, the child's start included for the first job
    test_s: float = 20.0  # one test, and a submission's module-level code
    memory_mb: int | None = DEFAULT_MEMORY_MB
    start_s: float = 60.0  # the child's start (imports) before the first job
    exit_s: float = 5.0  # the child's exit after the last verdict
    threads: int = 1  # OMP_NUM_THREADS of the child
    nproc: int | None = None  # RLIMIT_NPROC (only where the child runs as its own user)

    @classmethod
    def for_exercise(cls, exercise: Exercise, mode: str = "local") -> Limits:
        mem = exercise.memory_limit_mb or DEFAULT_MEMORY_MB
        return cls(run_s=exercise.time_limit, test_s=exercise.test_time_limit,
                   memory_mb=None if mode == "gpu" or nvidia_device_present() else mem)


@dataclass
class Judging:
    """One judging to run in a child: what is judged, how, and as which side (``role``)."""

    exercise: Exercise
    source: str | None  # None: the reference solution (computed in the child)
    filename: str = "submission.py"
    mode: str = "local"
    run_only: bool = False
    seed: int | None = None
    role: str = "judge"
    exercise_path: str | None = None  # where the child finds the exercise (default: exercise.path)
    first_failure: bool = False  # stop at the first test that does not pass (check's extra seeds: rejected or not)

    def to_request(self) -> dict:
        return {"exercise": self.exercise_path or str(self.exercise.path), "source": self.source,
                "filename": self.filename, "mode": self.mode, "run_only": self.run_only, "seed": self.seed,
                "role": self.role, "first_failure": self.first_failure}


@dataclass
class ChildSpec:
    """How a child is started: what it imports from, its environment, and its walls."""

    sys_path: list[str]
    env: dict[str, str]
    namespaces: bool = False  # its own PID namespace (and, with sandbox, network and mounts)
    sandbox: dict | None = None  # judge.sandbox.enter(**sandbox) before anything else
    workdir: str | None = None  # its private, writable folder (None: a fresh temporary one)
    lasting: bool = False  # workdir outlives the call (a kept learner tree): the child may be kept warm in it
    measures: list[str] = field(default_factory=list)  # for the verdict's trust
    fork: bool = True  # False: each job in the child itself, which then retires (what a child with CUDA does)


def local_spec(extra_sys_path: list[str] | None = None) -> ChildSpec:
    """A child for local judging: the repository's judge and engine, the environment minus ``PYTHON*``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    ns = sandbox.namespaces_available(trusted=False)
    measures = ["process", "python-isolated", "private-dir"] + (["pid-namespace"] if ns else ["process-group"])
    return ChildSpec(sys_path=[str(REPO_ROOT)] + list(extra_sys_path or []) + sandbox.python_path(), env=env,
                     namespaces=ns, measures=measures)


@dataclass
class Outcome:
    """A job's result from one child: its verdict and the observations of its checks (trusted mode)."""

    verdict: Verdict
    checks: dict[str, list[dict]] = field(default_factory=dict)  # test name -> observations, as sent
    reported: bool = True  # False: the child died or was killed and the verdict was built by the parent


@dataclass
class _JobState:
    job: Judging
    token: str = ""
    started: float = 0.0
    loading: bool = False  # the learner's code may have run
    load_started: float = 0.0
    planned: bool = False  # the submission loaded and the tests are known
    plan: list[str] = field(default_factory=list)
    results: list[TestResult] = field(default_factory=list)
    checks: dict[str, list[dict]] = field(default_factory=dict)
    current: str | None = None
    current_started: float = 0.0


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def _tail(path: str, start: int = 0, n: int = 1500) -> str:
    """The last ``n`` bytes of the log at ``path`` written after offset ``start`` (the current job's)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(start, size - n))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _partial(state: _JobState, status: str, message: str, current_status: str, current_msg: str,
             wall_ms: float, trust: Trust) -> Verdict:
    """A verdict built by the parent from what the child reported before it died or was killed."""
    j = state.job
    v = Verdict(status=status, exercise=j.exercise.slug, mode=j.mode, run=j.run_only, seed=j.seed, trust=trust)
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


class _Child:
    """One child process: started with its walls, fed one job at a time, always ended and cleaned up."""

    def __init__(self, spec: ChildSpec, limits: Limits):
        self.spec, self.limits = spec, limits
        self.private = tempfile.mkdtemp(prefix="judge-") if spec.workdir is None else None
        self.workdir = spec.workdir or self.private
        # a kept learner tree's child judges many learners' files: its log (what their processes printed) is kept
        # out of their sight, and a job's message quotes only what was printed since it was sent
        self.logdir = tempfile.mkdtemp(prefix="judge-log-") if spec.lasting else None
        self.log = os.path.join(self.logdir or self.workdir, "child.log")
        self.log_from = 0
        self.marker = secrets.token_hex(8)
        r, w = os.pipe()
        jr, jw = os.pipe()
        config = {"sys_path": spec.sys_path, "fd": w, "jobs_fd": jr, "memory_mb": limits.memory_mb,
                  "nproc": limits.nproc, "sandbox": spec.sandbox, "fork": spec.fork}
        env = dict(spec.env)
        env.update({MARKER: self.marker, "OMP_NUM_THREADS": str(limits.threads), "TMPDIR": self.workdir,
                    "PYTHONUNBUFFERED": "1"})
        if not nvidia_device_present():  # Triton kernels (chapter 19's) run in its interpreter: read at triton's import
            env.setdefault("TRITON_INTERPRET", "1")
        argv = [sys.executable, "-I", "-S", "-c", BOOT, json.dumps(config)]
        if spec.namespaces:
            argv = sandbox.namespace_prefix(trusted=spec.sandbox is not None) + argv
        else:
            sandbox.become_subreaper()
        self.started = time.monotonic()
        with open(self.log, "wb") as logf:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                         pass_fds=(w, jr), cwd=self.workdir, env=env, start_new_session=True)
        os.close(w)
        os.close(jr)
        self.events, self.jobs = r, jw
        self.buf = b""
        self.ready = False  # it said "ready": every later job is judged in a fork of it

    def send_job(self, job: Judging) -> str:
        """Send ``job`` (its line, then its source, which only its fork reads); returns its token (every event
        of its judging carries it)."""
        token = secrets.token_hex(16)
        request = {**job.to_request(), "token": token}
        source = request.pop("source")
        data = source.encode("utf-8") if source is not None else b""
        request["source_bytes"] = len(data) if source is not None else -1
        try:
            self.log_from = os.path.getsize(self.log)
        except OSError:
            self.log_from = 0
        message = (json.dumps(request) + "\n").encode() + data
        try:
            while message:
                message = message[os.write(self.jobs, message):]
        except OSError:  # the child is gone: its end is read from the event pipe
            pass
        return token

    def close_jobs(self) -> None:
        try:
            os.close(self.jobs)
        except OSError:
            pass
        self.jobs = -1

    def read(self, deadline: float) -> list[dict] | None:
        """The events that arrive before ``deadline`` ([] at the deadline); None once the child has ended."""
        sel = selectors.DefaultSelector()
        sel.register(self.events, selectors.EVENT_READ)
        try:
            while True:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    return []
                if not sel.select(timeout=min(timeout, 0.5)):
                    continue
                chunk = os.read(self.events, 65536)
                if not chunk or len(self.buf) > MAX_EVENT_BYTES:
                    return None  # ended, or flooding: end() kills it
                self.buf += chunk
                if b"\n" in self.buf:
                    *lines, self.buf = self.buf.split(b"\n")
                    out = []
                    for line in lines:
                        try:
                            ev = json.loads(line)
                        except ValueError:
                            continue
                        if isinstance(ev, dict):
                            out.append(ev)
                    return out
        finally:
            sel.close()

    def end(self) -> tuple[int | None, str]:
        """Kill whatever is left of the child (and everything it started); its exit status and last output."""
        self.close_jobs()
        try:
            self.proc.wait(timeout=max(0.0, min(self.limits.exit_s, 0.5)))
        except subprocess.TimeoutExpired:
            pass
        tree = sandbox.descendants(self.proc.pid) if self.proc.poll() is None else []
        sandbox.kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        sandbox.wait_gone(tree)  # a PID namespace's processes die a moment after its first one
        if not self.spec.namespaces:
            sandbox.kill_orphans(MARKER, self.marker, exclude={self.proc.pid})
        os.close(self.events)
        log = _tail(self.log, self.log_from)
        for folder in (self.private, self.logdir):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
        return self.proc.returncode, log


class _Warm:
    """Children that finished their jobs healthy, kept for the next call with the same walls (this process's
    later ``judge_isolated`` calls: ``check``'s exercises, the test suite's judgings). Each judging runs in a
    fork of its child, so a child is as clean after a job as before it. Ended when this process exits (their
    job pipe closes)."""

    SIZE = 3  # children kept (each holds torch and the engine: about 0.3 GiB resident): the reference's and
    # a learner tree's for trusted judging, and one more

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.kept: list[tuple[str, _Child]] = []

    @staticmethod
    def key(spec: ChildSpec, limits: Limits) -> str | None:
        if spec.workdir is not None and not spec.lasting:  # a folder the caller removes: the child goes with it
            return None
        return json.dumps([spec.sys_path, sorted(spec.env.items()), spec.namespaces, spec.sandbox, spec.measures,
                           spec.fork, spec.workdir, limits.memory_mb, limits.nproc, limits.threads])

    def take(self, key: str | None) -> _Child | None:
        with self.lock:
            for i, (k, child) in enumerate(self.kept):
                if k == key:
                    del self.kept[i]
                    return child
        return None

    def close(self, workdir: str | None = None) -> None:
        """End the kept children (only those working in ``workdir`` when given: its folder is going)."""
        with self.lock:
            kept = [(k, c) for k, c in self.kept if workdir is None or c.spec.workdir == workdir]
            self.kept = [kc for kc in self.kept if kc not in kept]
        for _, c in kept:
            c.end()

    def keep(self, key: str, child: _Child) -> None:
        with self.lock:
            self.kept.append((key, child))
            old = self.kept[:-self.SIZE]
            del self.kept[:-self.SIZE]
        for _, c in old:
            c.end()


_WARM = _Warm()
atexit.register(_WARM.close)


def kept_children() -> frozenset[int]:
    """The process ids of the warm children kept now (what a long-lived judge spares when it cleans up)."""
    with _WARM.lock:
        return frozenset(c.proc.pid for _, c in _WARM.kept)


def end_kept_children(workdir: str | None = None) -> None:
    """End the warm children kept in ``workdir`` (a lasting folder about to be removed), or all of them."""
    _WARM.close(workdir)


class _StaleChild(Exception):
    """A kept child was found dead before it started the first job it was given: nothing was consumed."""


def _run_child(jobs: list[Judging], limits: Limits, spec: ChildSpec) -> list[Outcome]:
    """Run jobs in one child (a kept warm one where there is one) until they are done or it retires or
    dies. Returns an outcome per job consumed (the last one may have been built here, for the job during
    which the child died or was killed)."""
    key = _Warm.key(spec, limits)
    child = _WARM.take(key) if key else None
    if child is not None:
        try:
            return _run_jobs(child, jobs, limits, spec, key)
        except _StaleChild:
            pass
    return _run_jobs(_Child(spec, limits), jobs, limits, spec, key)


def _run_jobs(child: _Child, jobs: list[Judging], limits: Limits, spec: ChildSpec, key: str | None) -> list[Outcome]:
    trust = Trust(level="local", measures=list(spec.measures))
    reused = child.ready
    outcomes: list[Outcome] = []
    state: _JobState | None = None
    outcome: tuple[str, str] | None = None  # (why, detail) when the child is stopped here
    fatal: str | None = None
    ready, ended = reused, False
    retire = False
    warm = False  # every job done and the child healthy: kept for the next call
    closing: str | None = None  # the last job's token, until its process has ended
    if reused:
        state = _JobState(job=jobs[0], started=time.monotonic())
        state.token = child.send_job(jobs[0])
    ended_rc: int | None = None  # the exit status of a job's process that ended without its verdict
    exit_deadline: float | None = None
    try:
        while not ended:
            now = time.monotonic()
            if not ready:
                deadline, why = child.started + limits.start_s, "start"
            elif state is not None:
                deadline, why = state.started + limits.run_s, "run"
                if state.current is not None and state.current_started + limits.test_s < deadline:
                    deadline, why = state.current_started + limits.test_s, "test"
                elif state.loading and not state.planned and state.load_started + limits.test_s < deadline:
                    deadline, why = state.load_started + limits.test_s, "load"
            else:
                if exit_deadline is None:
                    exit_deadline = now + limits.exit_s
                deadline, why = exit_deadline, "exit"
            if deadline <= now:
                outcome = (why, "")
                break
            events = child.read(deadline)
            if events is None:
                ended = True
                continue
            for ev in events:
                kind = ev.get("event")
                current = state.token if state is not None else closing
                if ready and kind != "fatal" and ev.get("token") != current:
                    continue  # not the current job's: written by an earlier judging, or forged
                if kind == "ready" and not ready:
                    ready = child.ready = True
                    state = _JobState(job=jobs[0], started=child.started)
                    state.token = child.send_job(jobs[0])
                elif kind == "ended" and state is None:  # the last job's process and all it left are gone
                    if len(outcomes) < len(jobs):  # the next job only now: nothing of the last one sees it
                        exit_deadline = None
                        state = _JobState(job=jobs[len(outcomes)], started=time.monotonic())
                        state.token = child.send_job(jobs[len(outcomes)])
                        continue
                    warm = ended = True
                    break
                elif kind == "ended" and state is not None and state.loading:
                    # the job's process (a fork) ended before its verdict, after the learner's code began: its
                    # verdict is built here, and the child, which cleaned up after it as after any job, goes on
                    rc = ev.get("rc")
                    wall = (time.monotonic() - state.started) * 1000
                    v = _ended_early(state, rc if isinstance(rc, int) else 0, fatal, _tail(child.log, child.log_from),
                                     wall, trust)
                    outcomes.append(Outcome(v, state.checks, reported=False))
                    fatal, state = None, None
                    if len(outcomes) < len(jobs):
                        state = _JobState(job=jobs[len(outcomes)], started=time.monotonic())
                        state.token = child.send_job(jobs[len(outcomes)])
                    elif key is not None:
                        warm = ended = True  # its process and all it left are gone already
                        break
                    else:
                        child.close_jobs()
                elif kind == "ended":  # the job's process ended before the learner's code ran: ours
                    rc = ev.get("rc")
                    ended_rc = rc if isinstance(rc, int) else 0
                    ended = True
                    break
                elif kind == "load" and state is not None:
                    state.loading, state.load_started = True, time.monotonic()
                elif kind == "plan" and state is not None:
                    state.plan = [str(n) for n in ev.get("tests", [])]
                    state.planned = True
                elif kind == "test_start" and state is not None:
                    state.current, state.current_started = str(ev.get("name")), time.monotonic()
                elif kind == "test_end" and state is not None:
                    try:
                        result = TestResult.from_dict(ev["test"])
                    except (KeyError, TypeError, ValueError):
                        continue
                    state.results.append(result)
                    state.current = None
                elif kind == "check" and state is not None and isinstance(ev.get("check"), dict):
                    kept = state.checks.setdefault(str(ev["check"].get("test")), [])
                    if len(kept) < MAX_CHECKS:
                        kept.append(ev["check"])
                elif kind == "verdict" and state is not None:
                    try:
                        v = Verdict.from_dict(ev["verdict"])
                    except (KeyError, TypeError, ValueError):
                        continue
                    v.ms = round((time.monotonic() - state.started) * 1000, 1)
                    v.trust = Trust(level=v.trust.level, measures=list(spec.measures))
                    v.finalize()
                    if v.status == "internal_error" and state.loading:
                        # every failure of ours comes before the learner's code runs (judge.harness);
                        # one reported after it is the learner's code breaking (or forging) the judge
                        v.status = "runtime_error"
                        v.message = ("The judge's process reported a failure of its own after your code had run: "
                                     "your code most likely broke it.\n" + v.message)
                    outcomes.append(Outcome(v.finalize(), state.checks))
                    retire = bool(ev.get("retire"))
                    state = None
                    if not retire and (len(outcomes) < len(jobs) or key is not None):
                        # the next job, or keeping the child, once its process is gone: nothing it started outlives it
                        closing = ev.get("token")
                    else:
                        child.close_jobs()
                elif kind == "fatal":
                    fatal = str(ev.get("message"))
    finally:
        if warm:
            _WARM.keep(key, child)
        else:
            rc, log = child.end()
    if warm:
        return outcomes
    if reused and not outcomes and outcome is None and (state is None or not state.loading):
        raise _StaleChild  # it died between two calls, before anything of this one ran: start a fresh one
    if ended_rc is not None:
        rc = ended_rc

    if state is None and ready:
        return outcomes  # every job sent got its verdict (the exit deadline, if any, only ended the child)
    if state is None:  # the child never became ready: ours
        state = _JobState(job=jobs[0], started=child.started)
    wall = (time.monotonic() - state.started) * 1000
    if outcome is not None:
        why = outcome[0]
        if why == "test":
            msg = (f"Test {state.current} ran past its time limit of {limits.test_s:g} s (an endless loop?) "
                   "and was stopped.")
            v = _partial(state, "timeout", msg, "timeout", msg, wall, trust)
        elif why == "load" or why == "run" and state.loading and not state.planned:
            lim = limits.test_s if why == "load" else limits.run_s
            msg = (f"Your file's module-level code ran past the time limit of {lim:g} s and was stopped "
                   "(an endless loop?).")
            v = _partial(state, "timeout", msg, "timeout", msg, wall, trust)
        elif why == "run" and state.loading:
            msg = f"The run went past its time limit of {limits.run_s:g} s and was stopped."
            v = _partial(state, "timeout", msg, "timeout", msg, wall, trust)
        else:
            v = _partial(state, "internal_error", f"The judge's process did not start within {limits.start_s:g} s "
                         f"(not your fault).\n{log[-600:]}", "error", "", wall, trust)
        return outcomes + [Outcome(v, state.checks, reported=False)]

    if not state.loading:  # nothing of the learner's ran yet: ours
        detail = fatal or (f"exit code {rc}" if rc is not None and rc >= 0 else _signal_name(rc or 0))
        v = _partial(state, "internal_error", f"The judge's process failed before your code ran (not your fault): "
                     f"{detail}\n{log[-800:]}", "error", "", wall, trust)
        return outcomes + [Outcome(v, state.checks, reported=False)]

    v = _ended_early(state, rc, fatal, log, wall, trust)
    return outcomes + [Outcome(v, state.checks, reported=False)]


def _ended_early(state: _JobState, rc: int | None, fatal: str | None, log: str, wall: float, trust: Trust) -> Verdict:
    """The verdict of a judging whose process ended (crashed, was killed, exited) after the learner's code began and
    before it reported one."""
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
    return _partial(state, "runtime_error", msg, "error", msg if state.current else "", wall, trust)


def judge_isolated(judgings: list[Judging], *, limits: Limits | None = None,
                   spec: ChildSpec | None = None) -> list[Outcome]:
    """The isolated layer's one entry: judge each of ``judgings`` in a clean binding, in as few child
    processes as possible, and return an outcome per judging, in order. A judging that ends its own process (a
    fork of the child) without a verdict (a crash, ``os._exit``) gets a verdict built here, and the child goes on
    with the rest; one that ends the child, or runs out of time, gets one too, and the rest go to a new child.

    ``limits``: the first judging's exercise's (``Limits.for_exercise``) when None; ``spec``: how each
    child starts (``local_spec()`` when None: the repository's judge and engine)."""
    spec = spec or local_spec()
    out: list[Outcome] = []
    rest = list(judgings)
    while rest:
        lim = limits or Limits.for_exercise(rest[0].exercise, rest[0].mode)
        got = _run_child(rest, lim, spec)
        if not got:  # cannot happen (a child always yields at least one outcome), but never loop forever
            raise RuntimeError("the judge's child ended without a verdict")
        out.extend(got)
        rest = rest[len(got):]
    return out

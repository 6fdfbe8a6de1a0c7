"""Executors: how a runner judges one job. Both run ``python -m runner.job IN OUT`` and read the verdict
from ``OUT/verdict.json``:

- ``docker`` (the default on a GPU machine): in a fresh container (``runner.containers``), one GPU per job;
- ``local``: as a subprocess in its own session, for development and the embedded default.

A submission's mode ``gpu`` is judged in the judge's mode ``gpu`` on a slot with a GPU; on a slot without
one (``--emulate-gpu``) it is judged in mode ``local``, where CUDA graphs are emulated (``EmulatedGraph``),
and ``judged_on`` says so. Mode ``cpu`` is judged in mode ``local`` (``judge.modes.judge_mode``).

``Executor.judge`` returns a ``JobResult``: a verdict to post, or a hand-back (the job goes back to the queue
unjudged: the runner is stopping, or the containers themselves failed).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import random
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import modes, sandbox
from judge.exercise import Exercise, ExerciseError, find_exercise
from judge.isolation import Judging, Outcome
from judge.trusted import Sides, judge_trusted, prepare_learner_tree
from judge.verdict import Verdict

from .containers import ContainerError, ContainerLimits, ContainerResult, DockerSandbox, read_out

REPO_ROOT = Path(__file__).resolve().parent.parent
JOB_ARGV = ["python", "-m", "runner.job", "/in", "/out"]
STARTUP_S = 30.0  # beyond the exercise's own time limit: the container, Python and the judge starting


@dataclass
class Slot:
    """Where one job runs at a time: a GPU (``gpu_id``, ``gpu_name``) or a CPU slot."""

    name: str
    gpu_id: str | None = None
    gpu_name: str | None = None


@dataclass
class JobResult:
    """What a runner posts for one job: its verdict, or a hand-back (``verdict`` None) with the reason."""

    verdict: dict[str, Any] | None
    judged_on: dict[str, Any] = field(default_factory=dict)
    handback: bool = False
    reason: str = ""


class Cancelled(Exception):
    """The job was cancelled while its containers ran (the runner is stopping): it is handed back."""


def _verdict(job: dict[str, Any], status: str, message: str, mode: str) -> dict[str, Any]:
    return Verdict.failure(status, message, exercise=str(job.get("exercise", "")), mode=mode,
                           run=bool(job.get("run"))).to_dict()


def interpret(job: dict[str, Any], mode: str, res: ContainerResult, limits: ContainerLimits) -> dict[str, Any]:
    """The verdict of a finished run: the file it wrote, else what happened to it (never its stdout)."""
    raw = res.files_out.get("verdict.json")
    if res.exit_code == 0 and raw is not None:
        try:
            return Verdict.from_dict(json.loads(raw)).to_dict()
        except (ValueError, KeyError, TypeError):
            pass
    if res.out_overflow:
        return _verdict(job, "runtime_error", f"Your code wrote more than {limits.out_mb} MB into the job's output "
                        "folder and was stopped.", mode)
    if res.timed_out:
        return _verdict(job, "timeout", f"The judging ran past the runner's hard limit of {limits.wall_s:g} s "
                        "and was killed.", mode)
    if res.oom_killed:
        return _verdict(job, "runtime_error", f"The judging ran out of memory (the limit is {limits.memory_mb} MB) "
                        "and was killed.", mode)
    return _verdict(job, "internal_error", "The runner's judging process failed without a verdict (not your "
                    f"fault): exit status {res.exit_code}.\n{res.log_tail[-1500:]}", mode)


class Executor:
    kind = "base"

    def __init__(self, *, emulate_gpu: bool = False, memory_mb: int = 4096, cpus: float = 1.0):
        self.emulate_gpu = emulate_gpu
        self.memory_mb = memory_mb
        self.cpus = cpus

    def prepare(self) -> None:
        """Check what the executor needs, once, before the first claim (raise to refuse to start)."""

    def close(self) -> None:
        """Release what it keeps between jobs, once, when the runner stops."""

    def modes(self, slot: Slot) -> list[str]:
        return ["gpu", "cpu"] if slot.gpu_id is not None or self.emulate_gpu else ["cpu"]

    def judge_mode(self, job: dict[str, Any], slot: Slot) -> str:
        return modes.judge_mode(str(job.get("mode")), gpu=slot.gpu_id is not None)

    def judged_on(self, job: dict[str, Any], slot: Slot) -> dict[str, Any]:
        mode = self.judge_mode(job, slot)
        emulated = job.get("mode") == "gpu" and mode != "gpu"
        d: dict[str, Any] = {"executor": self.kind, "slot": slot.name, "mode": mode,
                             "device": "cuda" if mode == "gpu" else "cpu", "gpu": slot.gpu_name if mode == "gpu"
                             else None, "emulated": emulated}
        if emulated:
            d["note"] = ("This runner has no GPU: the submission was judged on the CPU, where CUDA graphs are "
                         "emulated (EmulatedGraph replays only the captured buffers).")
        return d

    def limits(self, job: dict[str, Any], slot: Slot) -> ContainerLimits:
        try:
            time_limit = float(find_exercise(str(job["exercise"])).time_limit)
        except (ExerciseError, KeyError):
            time_limit = 60.0
        return ContainerLimits(wall_s=time_limit + STARTUP_S, memory_mb=self.memory_mb, cpus=self.cpus,
                               gpu=slot.gpu_id if self.judge_mode(job, slot) == "gpu" else None)

    def judge(self, job: dict[str, Any], slot: Slot, cancel: threading.Event) -> JobResult:
        """Judge in the judge's trusted mode (``judge_trusted``: the screen first, then both sides)."""
        mode = self.judge_mode(job, slot)
        on = self.judged_on(job, slot)
        try:
            exercise = find_exercise(str(job["exercise"]))
        except (ExerciseError, KeyError):
            return JobResult(_verdict(job, "internal_error", f"This runner has no exercise {job.get('exercise')!r}: "
                                      "it is older than the site (not your fault).", mode), on)
        judging = Judging(exercise, str(job["code"]), "submission.py", mode, bool(job.get("run")),
                          seed=random.SystemRandom().randrange(2**31))
        try:
            verdict = self.trusted_verdict(judging, self.limits(job, slot), cancel)
        except ContainerError as e:
            return JobResult(None, on, handback=True, reason=str(e))
        except Cancelled:
            return JobResult(None, on, handback=True, reason="cancelled")
        return JobResult(verdict, on)

    def trusted_verdict(self, judging: Judging, limits: ContainerLimits, cancel: threading.Event) -> dict[str, Any]:
        """The verdict, as a dict. Raises Cancelled, or ContainerError when the containers failed."""
        raise NotImplementedError

    def run(self, argv: list[str], files_in: dict[str, bytes], limits: ContainerLimits,
            cancel: threading.Event | None, mask: tuple[str, ...] = ()) -> ContainerResult:
        raise NotImplementedError


def read_side(res: ContainerResult, job: dict[str, Any], limits: ContainerLimits, *, learner: bool) -> Outcome:
    """One side's outcome from its container: the file its PID 1 wrote, else what happened to it."""
    raw = res.files_out.get("outcome.json")
    if res.exit_code == 0 and raw is not None:
        try:
            d = json.loads(raw)
            checks = d.get("checks") or {}
            if not isinstance(checks, dict) or not all(isinstance(v, list) for v in checks.values()):
                raise ValueError("checks")
            return Outcome(Verdict.from_dict(d["verdict"]), {str(k): v for k, v in checks.items()},
                               reported=bool(d.get("reported", True)))
        except (ValueError, KeyError, TypeError, AttributeError):
            if learner:  # what the learner's process reported is not ours to own
                v = _verdict(job, "runtime_error", "Your process's report could not be read.", job["mode"])
                return Outcome(Verdict.from_dict(v), {}, reported=True)
    v = Verdict.from_dict(interpret(job, job["mode"], ContainerResult(
        exit_code=res.exit_code if raw is None else -1, timed_out=res.timed_out, oom_killed=res.oom_killed,
        out_overflow=res.out_overflow, log_tail=res.log_tail), limits))
    return Outcome(v, {}, reported=False)


class DockerExecutor(Executor):
    """Trusted mode with one container per side: the reference's container has the engine; the learner's
    has only the copy ``prepare_learner_tree`` makes (the targets' bodies removed), with the image's engine
    and exercises masked by empty mounts. This process, which never runs the learner's code, decides."""

    kind = "docker"
    MASK = ("/opt/minisgl/minisgl", "/opt/minisgl/exercises")  # the image's own engine and exercises
    MEASURES = ["docker", "container-per-side", "no-network", "read-only-root", "no-capabilities", "non-root",
                "no-reference-on-disk", "process", "python-isolated", "private-dir"]

    def __init__(self, *, image: str, work_dir: str, owner: str = "runner", **kw: Any):
        super().__init__(**kw)
        self.sandbox = DockerSandbox(image, work_dir, owner=owner)

    def prepare(self) -> None:
        self.sandbox.check_image()
        self.sandbox.remove_leftovers()

    def run(self, argv, files_in, limits, cancel, mask=()):
        return self.sandbox.run_container(argv, files_in, limits, cancel, mask=mask)

    def trusted_verdict(self, judging, limits, cancel):
        sides = functools.partial(self.run_sides, limits=limits, cancel=cancel)
        return judge_trusted([judging], sides=sides)[0].to_dict()

    def run_sides(self, reference: Judging, learners: list[Judging], *, limits: ContainerLimits,
                  cancel: threading.Event) -> Sides:
        """The sides of a trusted judging (``judge_trusted``'s ``sides``): the reference and the (one)
        learner judging, each in its own container, at once. Raises Cancelled or ContainerError."""
        (mine,) = learners
        exercise: Exercise = reference.exercise
        spec = {"exercise": exercise.slug, "mode": reference.mode, "run": reference.run_only, "seed": reference.seed}
        with tempfile.TemporaryDirectory(prefix="learner-tree-") as tmp:
            tree = prepare_learner_tree(exercise, tmp)
            tree_files = {f"tree/{p.relative_to(tree.root)}": p.read_bytes()
                          for p in sorted(tree.root.rglob("*")) if p.is_file()}
        learner_in = {"job.json": json.dumps({**spec, "role": "learner", "measures": self.MEASURES}).encode(),
                      "submission.py": (mine.source or "").encode("utf-8"), **tree_files}
        reference_in = {"job.json": json.dumps({**spec, "role": "reference"}).encode()}
        both = threading.Event()  # one side failing to start cancels the other
        stop = _Either(cancel, both)
        results: dict[str, ContainerResult | BaseException] = {}

        def side(name: str, files: dict[str, bytes], mask: tuple[str, ...]) -> None:
            try:
                results[name] = self.run(JOB_ARGV, files, limits, stop, mask=mask)
            except BaseException as e:  # noqa: BLE001 - re-raised below, in this thread
                results[name] = e
                both.set()

        threads = [threading.Thread(target=side, args=("reference", reference_in, ())),
                   threading.Thread(target=side, args=("learner", learner_in, self.MASK))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results.values():
            if isinstance(r, BaseException):
                raise r if isinstance(r, ContainerError) else ContainerError(f"{type(r).__name__}: {r}")
        ref, theirs = results["reference"], results["learner"]
        assert isinstance(ref, ContainerResult) and isinstance(theirs, ContainerResult)
        if ref.cancelled or theirs.cancelled:
            raise Cancelled
        job = {"exercise": exercise.slug, "mode": reference.mode, "run": reference.run_only}
        return Sides(read_side(ref, job, limits, learner=False), [read_side(theirs, job, limits, learner=True)],
                     self.MEASURES)


class _Either:
    """An event that is set when either of two is (``is_set`` only: what the sandbox polls)."""

    def __init__(self, a: threading.Event, b: threading.Event):
        self.a, self.b = a, b

    def is_set(self) -> bool:
        return self.a.is_set() or self.b.is_set()


class LocalExecutor(Executor):
    """The same job entry as in the container, without a container (development, and the embedded default):
    each slot keeps a warm judge, ``python -m runner.job --serve`` in a session of its own, which judges its
    jobs one after the other with torch and the engine imported once (``runner.job.serve``). A job past its
    wall time, or cancelled, ends that judge and everything it started; the slot's next job starts a new one."""

    kind = "local"

    def __init__(self, *, work_dir: str | None = None, **kw: Any):
        kw.setdefault("emulate_gpu", True)
        super().__init__(**kw)
        self.work_dir = work_dir
        self._judges: dict[tuple[int, int | None], _WarmJudge] = {}  # (slot thread, GPU) -> its judge
        self._lock = threading.Lock()

    def prepare(self) -> None:
        if self.work_dir:
            os.makedirs(self.work_dir, exist_ok=True)

    def trusted_verdict(self, judging, limits, cancel):
        """The whole trusted judging in the slot's warm judge (``judge_trusted``: the screen, the reference and
        learner processes, the judge's own sandbox where the kernel allows it)."""
        spec = {"exercise": judging.exercise.slug, "mode": judging.mode, "run": judging.run_only,
                "seed": judging.seed, "role": "trusted"}
        files = {"job.json": json.dumps(spec).encode(), "submission.py": (judging.source or "").encode("utf-8")}
        res = self.run(JOB_ARGV, files, limits, cancel)
        if res.cancelled:
            raise Cancelled
        return interpret({"exercise": judging.exercise.slug, "run": judging.run_only}, judging.mode, res, limits)

    def run(self, argv, files_in, limits, cancel, mask=()):
        key = (threading.get_ident(), limits.gpu)
        with self._lock:
            judge = self._judges.get(key)
        if judge is None or not judge.alive():
            judge = _WarmJudge(self._env(limits), self.work_dir)
            with self._lock:
                self._judges[key] = judge
        job_dir = Path(tempfile.mkdtemp(prefix="job-", dir=self.work_dir))
        try:
            in_dir, out_dir = job_dir / "in", job_dir / "out"
            in_dir.mkdir()
            out_dir.mkdir()
            for rel, data in files_in.items():
                (in_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                (in_dir / rel).write_bytes(data)
            res = judge.judge(in_dir, out_dir, limits, cancel)
            res.files_out = read_out(out_dir, limits.out_mb * 2**20)
            return res
        finally:
            shutil.rmtree(job_dir, ignore_errors=True)

    def _env(self, limits: ContainerLimits) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MINISGL_RUNNER_", "MINISGL_PRACTICE_"))}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        if limits.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(limits.gpu)
        # the tiny models' real folder: the learner's sandbox keeps it visible by path (a symlinked
        # models/ would be hidden with the repository)
        models = os.environ.get("MINISGL_TEST_MODELS") or str(REPO_ROOT / "models" / "test")
        env["MINISGL_TEST_MODELS"] = str(Path(models).resolve())
        return env

    def close(self) -> None:
        """End every slot's warm judge (the runner is stopping)."""
        with self._lock:
            judges, self._judges = list(self._judges.values()), {}
        for j in judges:
            j.end()


class _WarmJudge:
    """One ``python -m runner.job --serve`` process and its private folder (its HOME and its log)."""

    def __init__(self, env: dict[str, str], work_dir: str | None):
        self.home = tempfile.mkdtemp(prefix="judge-server-", dir=work_dir)
        self.log = os.path.join(self.home, "log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "runner.job", "--serve"], cwd=self.home,
                                         env={**env, "HOME": self.home}, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=log, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def judge(self, in_dir: Path, out_dir: Path, limits: ContainerLimits,
              cancel: threading.Event | None) -> ContainerResult:
        t0 = time.monotonic()
        log_from = os.path.getsize(self.log)
        res = ContainerResult(exit_code=None)
        try:
            self.proc.stdin.write(f"{in_dir}\t{out_dir}\n".encode())
            self.proc.stdin.flush()
        except OSError:
            pass  # it is gone: read below
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while True:
                if time.monotonic() - t0 > limits.wall_s:
                    res.timed_out = True
                elif cancel is not None and cancel.is_set():
                    res.cancelled = True
                if res.timed_out or res.cancelled:
                    break
                if sel.select(timeout=0.05):
                    if self.proc.stdout.readline() == b"done\n":
                        res.exit_code = 0
                    break  # done, or it ended without finishing the job
        finally:
            sel.close()
        res.wall_s = round(time.monotonic() - t0, 3)
        with open(self.log, "rb") as f:
            f.seek(max(log_from, os.path.getsize(self.log) - 4000))
            res.log_tail = f.read().decode("utf-8", "replace")
        if res.exit_code is None:  # past its time, cancelled, or it died: it goes, with all it started
            self.end()
            if not (res.timed_out or res.cancelled):
                res.exit_code = self.proc.returncode
        return res

    def end(self) -> None:
        """Kill it and everything it started (its warm children and theirs), and remove its folder."""
        sandbox.kill_tree(self.proc.pid, reap=lambda: self.proc.wait())
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self.home, ignore_errors=True)


def make_executor(name: str, **kw: Any) -> Executor:
    """``docker``, ``local``, or ``package.module:Class`` (an Executor subclass)."""
    if name == "docker":
        return DockerExecutor(**kw)
    if name == "local":
        kw.pop("image", None)
        kw.pop("owner", None)
        return LocalExecutor(**kw)
    if ":" in name:
        module, _, cls = name.partition(":")
        return getattr(importlib.import_module(module), cls)(**kw)
    raise ValueError(f"unknown executor {name!r} (docker, local, or module:Class)")

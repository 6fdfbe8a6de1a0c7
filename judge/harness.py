"""The harness core: load an exercise's tests, bind a submission, run the tests, build the verdict.

Runs in-process with nothing but the standard library and the engine: no subprocess, signals or
threads, because the browser runs this very module inside Pyodide. Isolation (a child process,
time and memory limits) wraps it: see ``judge.isolation``.

In the browser an endless loop is interrupted through ``pyodide.setInterruptBuffer``, which raises
``KeyboardInterrupt`` inside the running test: the core reports that test as ``timeout``.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib.util
import inspect
import io
import os
import platform
import random
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from . import testing
from .binding import (
    Binding,
    CompileError,
    SubmissionLoadError,
    TargetResolveError,
    load_submission,
    reference_source,
    resolve_targets,
    unload_submission,
)
from .exercise import Exercise
from .explain import TESTING_FILE, explain_assertion, rewrite_asserts, trimmed_traceback
from .verdict import MESSAGE_CAP, OUTPUT_CAP, Env, TestResult, Verdict, cap

Event = Callable[[dict], None]
TESTS_MODULE = "_judge_exercise_tests"


class _Capture(io.TextIOBase):
    """A text stream that keeps the first ``limit`` characters written to it."""

    def __init__(self, limit: int = OUTPUT_CAP):
        self.limit, self.parts, self.kept, self.dropped = limit, [], 0, 0

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        s = str(s)
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(room, len(s))
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n... [{self.dropped} more characters of output not shown]"
        return text


def environment() -> Env:
    env = Env(python=platform.python_version())
    try:
        import torch

        env.torch = str(torch.__version__)
        if testing.cuda_available():
            env.device = "cuda"
            try:
                env.gpu = str(torch.cuda.get_device_name(0))
            except Exception:  # noqa: BLE001
                env.gpu = "unknown CUDA device"
    except Exception:  # noqa: BLE001 - no torch: the verdict still says what we know
        pass
    return env


def _oom(e: BaseException) -> bool:
    if isinstance(e, MemoryError):
        return True
    text = str(e)
    return any(s in text for s in ("can't allocate memory", "CUDA out of memory", "out of memory",
                                   "DefaultCPUAllocator"))


class _ModuleGuard:
    """Puts back modules the submission removed from (or replaced in) ``sys.modules``."""

    def __init__(self, roots: set[str]):
        self.snapshot = {
            k: v for k, v in sys.modules.items() if v is not None and k.split(".")[0] in roots
        }

    def heal(self) -> list[str]:
        healed = []
        for k, v in self.snapshot.items():
            if sys.modules.get(k) is not v:
                sys.modules[k] = v
                healed.append(k)
        return healed


def _error_message(e: BaseException, keep: set[str], memory_limit_mb: int | None) -> str:
    if isinstance(e, SystemExit):
        return (f"The code raised SystemExit({e.code!r}) (sys.exit() or exit()): a submission must "
                "not end the process.\n" + trimmed_traceback(e, keep))
    text = trimmed_traceback(e, keep)
    if _oom(e):
        limit = f" (the judge's memory limit is {memory_limit_mb} MiB)" if memory_limit_mb else ""
        return f"Out of memory: the code tried to allocate more memory than it may use{limit}.\n{text}"
    if isinstance(e, RecursionError):
        return "RecursionError: the recursion never ends (maximum recursion depth exceeded).\n" + text
    return text


def _classify(e: BaseException, tests_file: str, keep: set[str], memory_limit_mb: int | None) -> tuple[str, str]:
    """(test status, message) for an exception raised by a test."""
    if isinstance(e, KeyboardInterrupt):
        return "timeout", "The test was interrupted: it ran past its time limit (an endless loop?)."
    if isinstance(e, AssertionError):
        tb = e.__traceback__
        frames = []
        while tb is not None:
            frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        if frames:
            inner_file = frames[-1][0].f_code.co_filename
            if inner_file == tests_file:
                frame, lineno = frames[-1]
                return "fail", explain_assertion(frame, lineno, e)
            if inner_file == TESTING_FILE or inner_file.endswith(os.sep + "judge" + os.sep + "testing.py"):
                where = [f"{os.path.basename(tests_file)}, line {ln}" for fr, ln in frames
                         if fr.f_code.co_filename == tests_file]
                return "fail", str(e) + (f"\n({where[-1]})" if where else "")
    return "error", _error_message(e, keep, memory_limit_mb)


def _collect_tests(module: Any) -> list[tuple[str, Callable]]:
    tests = [
        (name, fn)
        for name, fn in vars(module).items()
        if name.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__
    ]
    return sorted(tests, key=lambda nf: nf[1].__code__.co_firstlineno)


def _load_tests(exercise: Exercise) -> Any:
    """Import the exercise's tests.py, with its asserts rewritten to keep the values they compare."""
    path = str(exercise.tests_path)
    spec = importlib.util.spec_from_file_location(TESTS_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[TESTS_MODULE] = module
    source = exercise.tests_path.read_text(encoding="utf-8")
    code = compile(rewrite_asserts(ast.parse(source, path)), path, "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


def judge_source(
    exercise: Exercise,
    source: str,
    *,
    filename: str = "submission.py",
    mode: str = "local",
    run_only: bool = False,
    on_event: Event | None = None,
    memory_limit_mb: int | None = None,
    seed: int | None = None,
) -> Verdict:
    """Judge one submission in this process and return its verdict. Never raises (but KeyboardInterrupt
    outside a test propagates, so a learner's Ctrl-C still stops a local in-process run)."""
    t0 = time.perf_counter()
    emit = on_event or (lambda ev: None)
    verdict = Verdict(status="accepted", exercise=exercise.slug, mode=mode, run=run_only)

    def done(v: Verdict) -> Verdict:
        v.ms = round((time.perf_counter() - t0) * 1000, 1)
        v.message = cap(v.message, MESSAGE_CAP)
        return v.finalize()

    try:
        verdict.env = environment()
    except Exception:  # noqa: BLE001
        pass
    if mode not in exercise.modes:
        verdict.status = "internal_error"
        verdict.message = f"Exercise {exercise.slug!r} is not judged in mode {mode!r} (its modes: {exercise.modes})."
        return done(verdict)
    cuda = testing.cuda_available()
    if mode == "gpu" and not cuda:
        verdict.status = "internal_error"
        verdict.message = ("Mode 'gpu' needs a CUDA device, and this machine has none "
                           "(torch.cuda.is_available() is False).")
        return done(verdict)

    roots = {t.module.split(".")[0] for t in exercise.targets} | {"judge", "torch"}
    try:
        originals = resolve_targets(exercise.targets)
    except TargetResolveError as e:
        verdict.status, verdict.message = "internal_error", f"The exercise is broken: {e}"
        return done(verdict)
    guard = _ModuleGuard(roots)
    recursion_limit = sys.getrecursionlimit()
    binding = Binding(originals)
    tests_file = str(exercise.tests_path)
    keep = {filename, tests_file}
    load_out = _Capture()
    try:
        # 1. the submission's module code
        try:
            with contextlib.redirect_stdout(load_out), contextlib.redirect_stderr(load_out):
                submission = load_submission(source, originals, filename=filename)
        except CompileError as e:
            verdict.status, verdict.message = "compile_error", str(e)
            return done(verdict)
        except SubmissionLoadError as e:
            verdict.status = "runtime_error"
            verdict.message = "Your file raised while it was loaded (its module-level code):\n" + _error_message(
                e.exc, keep, memory_limit_mb)
            return done(verdict)
        finally:
            verdict.output = load_out.getvalue()
            guard.heal()
            sys.setrecursionlimit(recursion_limit)

        # 2. the tests
        binding.bind(submission)
        testing.RUN.reset()
        testing.RUN.mode, testing.RUN.originals = mode, originals
        testing.RUN.seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
        testing.RUN.binding, testing.RUN.submission = binding, submission
        try:
            module = _load_tests(exercise)
            tests = _collect_tests(module)
        except Exception:  # noqa: BLE001 - our tests.py is broken: never the learner's fault
            verdict.status = "internal_error"
            verdict.message = "The exercise's tests could not be loaded:\n" + traceback.format_exc(limit=-4)
            return done(verdict)
        if run_only:
            tests = [(n, f) for n, f in tests if n.startswith("test_example")]
        emit({"event": "plan", "tests": [n for n, _ in tests]})

        for name, fn in tests:
            result = TestResult(
                name=name, status="pass", doc=inspect.getdoc(fn) or "", visible=name.startswith("test_example")
            )
            reason = testing.needs_gpu(fn)
            if reason and (mode == "browser" or not cuda):
                result.status = "skip"
                result.message = (f"Skipped: {reason}; this machine has no CUDA device "
                                  "(torch.cuda.is_available() is False).")
                emit({"event": "test_end", "test": result.to_dict()})
                verdict.tests.append(result)
                continue
            emit({"event": "test_start", "name": name})
            testing.RUN.test = name
            out = _Capture()
            t = time.perf_counter()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    fn()
            except BaseException as e:  # noqa: BLE001 - everything a test can raise, SystemExit included
                result.status, result.message = _classify(e, tests_file, keep, memory_limit_mb)
                e.__traceback__ = None
            finally:
                result.ms = round((time.perf_counter() - t) * 1000, 1)
                result.output = out.getvalue()
                result.message = cap(result.message, MESSAGE_CAP)
                sys.setrecursionlimit(recursion_limit)
                healed = guard.heal()
                if healed and result.status == "pass":
                    result.message = f"(the judge put back module(s) your code removed: {', '.join(healed[:4])})"
            verdict.tests.append(result)
            emit({"event": "test_end", "test": result.to_dict()})
        verdict.metrics = dict(testing.RUN.metrics)
        return done(verdict)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - a failure of ours, never blamed on the learner
        verdict.status = "internal_error"
        verdict.message = "The judge failed (not your fault):\n" + traceback.format_exc(limit=-6)
        return done(verdict)
    finally:
        binding.restore()
        testing.RUN.reset()
        unload_submission()
        sys.modules.pop(TESTS_MODULE, None)
        guard.heal()
        sys.setrecursionlimit(recursion_limit)
        gc.collect()


def judge_reference(exercise: Exercise, **kw: Any) -> Verdict:
    """Judge the exercise's reference solution (the engine's own code)."""
    return judge_source(exercise, reference_source(exercise), filename="reference.py", **kw)

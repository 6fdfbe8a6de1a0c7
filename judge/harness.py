"""The harness core: load an exercise's tests, bind a submission, run the tests, build the verdict.

Runs in-process with nothing but the standard library and the engine: no subprocess, signals or
threads, because the browser runs this very module inside Pyodide. The front-ends wrap it: a child
process with limits for the command line (``judge.isolation``), a referee over two such processes in
trusted mode (``judge.trusted``), a Web Worker in the browser.

Roles (``testing.RUN.role``): ``judge`` decides the verdict here; in trusted mode ``reference`` (the
engine's own code bound) and ``learner`` (the learner's code, screened, in a process without the
reference) record every check's observation for the referee, who decides.

In the browser an endless loop is interrupted through ``pyodide.setInterruptBuffer``, which raises
``KeyboardInterrupt`` inside the running test: the core reports that test as ``timeout``.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import inspect
import io
import os
import platform
import random
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

from . import pyast, testing
from .binding import Binding, TargetResolveError, resolve_targets
from .checks import CHECKS_NAME, SITES_NAME, CheckFailed, Checks, compile_tests
from .exercise import Exercise
from .explain import _statements, explain_check_failed, trimmed_traceback
from .submission import CompileError, SubmissionLoadError, load_submission, register_source, unload_submission
from .verdict import MESSAGE_CAP, OUTPUT_CAP, Env, TestResult, Trust, Verdict, cap

Event = Callable[[dict], None]
TESTS_MODULE = "_judge_exercise_tests"
ROLES = ("judge", "reference", "learner")
TRUST_LEVEL = {"browser": "advisory", "local": "local", "gpu": "local"}


class _Capture(io.TextIOBase):
    """A text stream that keeps the first ``limit`` characters written to it."""

    def __init__(self, limit: int = OUTPUT_CAP):
        self.limit, self.parts, self.kept, self.dropped = limit, [], 0, 0

    def writable(self) -> bool:
        return True

    def write(self, s: Any) -> int:
        s = s if type(s) is str else str.__str__(s) if isinstance(s, str) else "<not a string>"
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


class _ModuleGuard:
    """Puts back modules the submission removed from (or replaced in) ``sys.modules``."""

    def __init__(self, roots: set[str]):
        self.snapshot = {k: v for k, v in sys.modules.items() if v is not None and k.split(".")[0] in roots}

    def heal(self) -> list[str]:
        healed = []
        for k, v in self.snapshot.items():
            if sys.modules.get(k) is not v:
                sys.modules[k] = v
                healed.append(k)
        return healed


def _text(e: BaseException) -> str:
    try:
        return str(e)
    except BaseException:  # noqa: BLE001 - a learner's exception whose __str__ raises
        return ""


def _error_message(e: BaseException, keep: set[str], memory_limit_mb: int | None, browser: bool) -> str:
    text = trimmed_traceback(e, keep)
    if isinstance(e, SystemExit):
        try:
            code = repr(e.code) if isinstance(e.code, (int, str, type(None))) else type(e.code).__name__
        except BaseException:  # noqa: BLE001
            code = "?"
        return (f"The code raised SystemExit({code}) (sys.exit() or exit()): a submission must not end the "
                "process.\n" + text)
    if isinstance(e, KeyboardInterrupt) and not browser:
        return "The code raised KeyboardInterrupt itself.\n" + text
    if isinstance(e, MemoryError) or any(s in _text(e) for s in (
            "can't allocate memory", "CUDA out of memory", "out of memory", "DefaultCPUAllocator")):
        limit = f" (the judge's memory limit is {memory_limit_mb} MiB)" if memory_limit_mb else ""
        return f"Out of memory: the code tried to allocate more memory than it may use{limit}.\n{text}"
    if isinstance(e, RecursionError):
        return "RecursionError: the recursion never ends (maximum recursion depth exceeded).\n" + text
    return text


def classify(e: BaseException, tests_file: str, tests_source: str, keep: set[str], memory_limit_mb: int | None,
             browser: bool) -> tuple[str, str]:
    """(test status, message) for an exception raised by a test. Never raises: describing a learner's
    exception can fail (its ``__str__`` raises, the recursion limit was lowered), and that is still theirs."""
    try:
        if isinstance(e, KeyboardInterrupt) and browser:
            return "timeout", "The test was interrupted: it ran past its time limit (an endless loop?)."
        if isinstance(e, CheckFailed):
            return "fail", explain_check_failed(e, tests_source, tests_file)
        if type(e) is AssertionError:  # raised by a helper of judge.testing, or by tests.py code itself
            frames = traceback.extract_tb(e.__traceback__)
            where = [f"tests.py, line {f.lineno}" for f in frames if f.filename == tests_file]
            return "fail", _text(e) + (f"\n({where[-1]})" if where else "")
        return "error", _error_message(e, keep, memory_limit_mb, browser)
    except BaseException as inner:  # noqa: BLE001
        try:
            kind = type(e).__name__
        except BaseException:  # noqa: BLE001
            kind = "an exception"
        return "error", (f"The code raised {kind}, and it could not be described "
                         f"({type(inner).__name__} while formatting it).")


def _seed_torch(seed: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            torch.manual_seed(seed)
        except Exception:  # noqa: BLE001 - a torch without a global generator: nothing to seed
            pass


def _compile_tests(exercise: Exercise) -> tuple[types.CodeType, list, str]:
    """tests.py read and compiled before the submission runs, its asserts rewritten into checks (compiled once
    per process and text)."""
    path = str(exercise.tests_path)
    source = exercise.tests_path.read_text(encoding="utf-8")
    code, sites = compile_tests(path, source)
    register_source(path, source)
    return code, [dataclasses.replace(s) for s in sites], source  # fresh sites: a failure writes its message


def prepare(exercise: Exercise) -> None:
    """What every judging of ``exercise`` needs and none can change, made once by a warm child before it forks its
    judgings (each fork finds it done): the engine modules of its targets and of its tests' imports imported, its
    tests compiled and parsed for explanations. Only our files run here, never a submission; what fails is left
    for the judging to report."""
    import importlib

    with contextlib.suppress(Exception):
        resolve_targets(exercise.targets)
    with contextlib.suppress(Exception):
        _, _, source = _compile_tests(exercise)
        _statements(source)
        tree = pyast.parse(source)
        for node in tree.body:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for name in names:
                with contextlib.suppress(Exception):
                    importlib.import_module(name)
        if any(isinstance(n, ast.Constant) and n.value == "meta" for n in ast.walk(tree)):
            importlib.import_module("torch._dynamo")  # the first op on the meta device imports it (a second)


def _load_tests(code: types.CodeType, sites: list, checks: Checks, path: str) -> types.ModuleType:
    module = types.ModuleType(TESTS_MODULE)
    module.__file__ = path
    module.__dict__.update({CHECKS_NAME: checks, SITES_NAME: sites})
    sys.modules[TESTS_MODULE] = module
    exec(code, module.__dict__)
    return module


def _collect_tests(module: Any) -> list[tuple[str, Callable]]:
    tests = [
        (name, fn)
        for name, fn in vars(module).items()
        if name.startswith("test_") and inspect.isfunction(fn) and fn.__module__ == module.__name__
    ]
    return sorted(tests, key=lambda nf: nf[1].__code__.co_firstlineno)


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
    role: str = "judge",
    first_failure: bool = False,
) -> Verdict:
    """Judge one submission in this process and return its verdict. Never raises. ``first_failure``: the tests
    after the first one that does not pass are not run (nor listed): enough to know that it is rejected."""
    t0 = time.perf_counter()
    emit = on_event or (lambda ev: None)
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    verdict = Verdict(status="accepted", exercise=exercise.slug, mode=mode, run=run_only, seed=seed,
                      trust=Trust(level=TRUST_LEVEL.get(mode, "local"), measures=["in-process"]))
    browser = mode == "browser"

    def done(v: Verdict) -> Verdict:
        v.ms = round((time.perf_counter() - t0) * 1000, 1)
        v.message = cap(v.message, MESSAGE_CAP)
        if "triton" in sys.modules:  # the tests or the engine use Triton kernels: the verdict says how they ran
            v.env.triton = "interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "compiled"
        return v.finalize()

    try:
        verdict.env = environment()
    except Exception:  # noqa: BLE001
        pass
    if role not in ROLES:
        verdict.status, verdict.message = "internal_error", f"unknown role {role!r} (one of {ROLES})"
        return done(verdict)
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
        tests_code, sites, tests_source = _compile_tests(exercise)
    except (TargetResolveError, OSError, SyntaxError) as e:
        verdict.status, verdict.message = "internal_error", f"The exercise is broken: {type(e).__name__}: {e}"
        return done(verdict)
    guard = _ModuleGuard(roots)
    recursion_limit = sys.getrecursionlimit()
    binding = Binding(originals, also=(TESTS_MODULE,))
    tests_file = str(exercise.tests_path)
    keep = {filename, tests_file}
    checks = Checks(record=role != "judge",
                    on_observe=lambda o: emit({"event": "check", "check": o.to_wire()}))
    load_out = _Capture()
    testing.RUN.reset()
    testing.RUN.mode, testing.RUN.originals, testing.RUN.role, testing.RUN.seed = mode, originals, role, seed
    testing.RUN.checks = checks
    try:
        # 1. the tests, before anything of the learner's runs: whatever fails here is ours
        try:
            module = _load_tests(tests_code, sites, checks, tests_file)
            tests = _collect_tests(module)
        except Exception:  # noqa: BLE001 - our tests.py is broken: never the learner's fault
            verdict.status = "internal_error"
            verdict.message = "The exercise's tests could not be loaded:\n" + traceback.format_exc(limit=-4)
            return done(verdict)
        if run_only:
            tests = [(n, f) for n, f in tests if n.startswith("test_example")]
        runnable = [n for n, f in tests if not (testing.needs_gpu(f) and (browser or not cuda))]
        if not runnable:
            return done(verdict)  # no test: finalize says there is nothing to judge

        # 2. the submission's module code
        emit({"event": "load"})  # from here on, the learner's code may have run
        try:
            with contextlib.redirect_stdout(load_out), contextlib.redirect_stderr(load_out):
                submission = load_submission(source, originals, filename=filename, screened=role == "learner",
                                             extra_modules=tuple(exercise.trusted_imports))
        except CompileError as e:
            verdict.status, verdict.message = "compile_error", str(e)
            return done(verdict)
        except SubmissionLoadError as e:
            sys.setrecursionlimit(recursion_limit)
            if browser and isinstance(e.exc, KeyboardInterrupt):
                verdict.status = "timeout"
                verdict.message = "Your file's module-level code ran past its time limit (an endless loop?)."
            else:
                verdict.status = "runtime_error"
                verdict.message = "Your file raised while it was loaded (its module-level code):\n" + \
                    _error_message(e.exc, keep, memory_limit_mb, browser)
            return done(verdict)
        finally:
            verdict.output = load_out.getvalue()
            guard.heal()
            sys.setrecursionlimit(recursion_limit)

        # 3. the tests, with the submission bound
        binding.bind(submission)
        testing.RUN.binding, testing.RUN.submission = binding, submission
        emit({"event": "plan", "tests": [n for n, _ in tests]})

        for name, fn in tests:
            result = TestResult(
                name=name, status="pass", doc=inspect.getdoc(fn) or "", visible=name.startswith("test_example")
            )
            reason = testing.needs_gpu(fn)
            if reason and (browser or not cuda):
                result.status = "skip"
                result.message = (f"Skipped: {reason}; this machine has no CUDA device "
                                  "(torch.cuda.is_available() is False).")
                emit({"event": "test_end", "test": result.to_dict()})
                verdict.tests.append(result)
                continue
            emit({"event": "test_start", "name": name})
            testing.RUN.test, testing.RUN.drawn = name, None
            _seed_torch(testing.seed())  # torch's global generator too: the same draws in every process
            checks.start(name)
            out = _Capture()
            t = time.perf_counter()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    fn()
            except BaseException as e:  # noqa: BLE001 - everything a test can raise, SystemExit included
                sys.setrecursionlimit(recursion_limit)
                result.status, result.message = classify(e, tests_file, tests_source, keep, memory_limit_mb,
                                                         browser)
                e.__traceback__ = None
            finally:
                result.ms = round((time.perf_counter() - t) * 1000, 1)
                result.output = out.getvalue()
                if result.status != "pass" and testing.RUN.drawn is not None:
                    result.message += testing.draw_note(seed, name)
                result.message = cap(result.message, MESSAGE_CAP)
                sys.setrecursionlimit(recursion_limit)
                healed = guard.heal()
                if healed and result.status == "pass":
                    result.message = f"(the judge put back module(s) your code removed: {', '.join(healed[:4])})"
            verdict.tests.append(result)
            emit({"event": "test_end", "test": result.to_dict()})
            if first_failure and result.status not in ("pass", "skip"):
                break
        verdict.metrics = dict(testing.RUN.metrics)
        return done(verdict)
    except BaseException:  # noqa: BLE001 - a failure of ours, never blamed on the learner
        verdict.status = "internal_error"
        try:
            verdict.message = "The judge failed (not your fault):\n" + traceback.format_exc(limit=-6)
        except BaseException:  # noqa: BLE001
            verdict.message = "The judge failed (not your fault)."
        return done(verdict)
    finally:
        binding.restore()
        testing.RUN.reset()
        unload_submission()
        sys.modules.pop(TESTS_MODULE, None)
        guard.heal()
        sys.setrecursionlimit(recursion_limit)
        gc.collect()

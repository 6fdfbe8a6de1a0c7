"""The verdict: one JSON shape for the browser, the command line and the GPU runner.

Pure standard library (it is imported by the light command-line parent, which never imports torch).
The contract is described by ``judge/verdict.schema.json``; bump ``VERSION`` on any incompatible change.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

VERSION = 2  # 2: trust (level and measures) and seed

STATUSES = ("accepted", "wrong_answer", "runtime_error", "compile_error", "timeout", "internal_error")
FAILURES = ("compile_error", "runtime_error", "timeout", "internal_error")  # statuses that need no test
TEST_STATUSES = ("pass", "fail", "error", "skip", "timeout")
TRUST_LEVELS = ("advisory", "local", "trusted")

OUTPUT_CAP = 4000  # characters of captured output kept per test
MESSAGE_CAP = 4000  # characters of a failure message kept per test


def cap(text: str, limit: int) -> str:
    """Keep at most ``limit`` characters, saying how much was dropped."""
    if len(text) <= limit:
        return text
    dropped = len(text) - limit
    return text[:limit] + f"\n... [{dropped} more characters not shown]"


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class

    name: str
    status: str  # pass | fail | error | skip | timeout
    doc: str = ""
    message: str = ""
    output: str = ""
    ms: float = 0.0
    visible: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TestResult:
        return cls(
            name=str(d["name"]),
            status=str(d["status"]),
            doc=str(d.get("doc", "")),
            message=str(d.get("message", "")),
            output=str(d.get("output", "")),
            ms=float(d.get("ms", 0.0)),
            visible=bool(d.get("visible", False)),
        )


@dataclass
class Env:
    python: str = ""
    torch: str | None = None
    device: str = "cpu"
    gpu: str | None = None
    triton: str | None = None  # how Triton kernels ran where the judging used Triton: "interpreter" or "compiled"


@dataclass
class Trust:
    """What this verdict promises (docs/judge.md, "What a verdict means in each place").

    level: ``advisory`` (the browser: the learner owns the page), ``local`` (the learner owns the
    machine), ``trusted`` (a referee outside the learner's process decided). measures: the walls that
    were up, e.g. ``process``, ``pid-namespace``, ``screen``, ``no-reference``, ``referee``, ``docker``.
    """

    level: str = "local"
    measures: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    status: str
    exercise: str = ""
    mode: str = "local"
    run: bool = False  # True for "Run" (only the visible test_example* tests), False for "Submit"
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    total: int = 0
    ms: float = 0.0
    message: str = ""  # what went wrong outside any one test (compile errors, crashes, our own failures)
    output: str = ""  # output printed while the submission was loaded
    env: Env = field(default_factory=Env)
    tests: list[TestResult] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    seed: int | None = None  # the seed of the hidden inputs (--seed reproduces them)
    trust: Trust = field(default_factory=Trust)
    version: int = VERSION

    @classmethod
    def failure(cls, status: str, message: str, *, exercise: str, mode: str = "local", run: bool = False,
                seed: int | None = None, trust: Trust | None = None) -> Verdict:
        """The verdict of a judging that stopped before its tests could decide: ``status`` is one of
        ``FAILURES`` and is kept, ``message`` says why (capped). Every such verdict is built here."""
        if status not in FAILURES:
            raise ValueError(f"{status!r} is not a failure status (one of {FAILURES})")
        v = cls(status=status, exercise=exercise, mode=mode, run=run, message=cap(message, MESSAGE_CAP), seed=seed,
                trust=trust or Trust())
        return v.finalize()  # no tests: finalize keeps a failure status as it is

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["metrics"]:
            del d["metrics"]
        if d["env"]["triton"] is None:
            del d["env"]["triton"]
        return d

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        env = d.get("env") or {}
        trust = d.get("trust") or {}
        return cls(
            status=str(d["status"]),
            exercise=str(d.get("exercise", "")),
            mode=str(d.get("mode", "local")),
            run=bool(d.get("run", False)),
            passed=int(d.get("passed", 0)),
            failed=int(d.get("failed", 0)),
            skipped=int(d.get("skipped", 0)),
            total=int(d.get("total", 0)),
            ms=float(d.get("ms", 0.0)),
            message=str(d.get("message", "")),
            output=str(d.get("output", "")),
            env=Env(
                python=str(env.get("python", "")),
                torch=env.get("torch"),
                device=str(env.get("device", "cpu")),
                gpu=env.get("gpu"),
                triton=env.get("triton"),
            ),
            tests=[TestResult.from_dict(t) for t in d.get("tests", [])],
            metrics={str(k): float(v) for k, v in (d.get("metrics") or {}).items()},
            seed=int(d["seed"]) if d.get("seed") is not None else None,
            trust=Trust(level=str(trust.get("level", "local")), measures=[str(m) for m in trust.get("measures", [])]),
            version=int(d.get("version", VERSION)),
        )

    @classmethod
    def from_json(cls, text: str) -> Verdict:
        return cls.from_dict(json.loads(text))

    def finalize(self) -> Verdict:
        """Recount the tests and derive the status from them (keeps compile/internal errors as they are).

        The rules: our own failure wins (internal_error), then compile_error, then any test that timed
        out (timeout), then any test that raised (runtime_error), then any failed assertion
        (wrong_answer). A run in which nothing passed is never accepted.
        """
        self.passed = sum(t.status == "pass" for t in self.tests)
        self.failed = sum(t.status in ("fail", "error", "timeout") for t in self.tests)
        self.skipped = sum(t.status == "skip" for t in self.tests)
        self.total = len(self.tests)
        if self.status in ("internal_error", "compile_error"):
            return self
        statuses = {t.status for t in self.tests}
        if self.status == "timeout" or "timeout" in statuses:
            self.status = "timeout"
        elif self.status == "runtime_error" or "error" in statuses:
            self.status = "runtime_error"
        elif "fail" in statuses:
            self.status = "wrong_answer"
        elif self.passed == 0:
            self.status = "internal_error"
            if not self.message:
                self.message = (
                    f"No test ran in mode {self.mode!r}"
                    + (" (Run only runs the visible test_example* tests)" if self.run else "")
                    + ": every test was skipped, so there is nothing to judge. This is not your fault."
                )
        else:
            self.status = "accepted"
        return self

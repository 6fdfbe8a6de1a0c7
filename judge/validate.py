"""Validating exercises (``practice/judge.py check``): what an exercise must be before learners see it.

For each exercise, in every mode it lists that this machine can run:

- the statement and the explanation are not empty; tests.py has a visible ``test_example*``;
- ``hints.md`` has at least ``MIN_HINTS`` hints, none empty;
- at least ``MIN_MUTANTS`` known-wrong variants in ``mutants/``;
- the reference (the engine's own code) is accepted, by Submit and by Run;
- every alternative correct solution (``exercises/<slug>/alternatives/*.py``) is accepted;
- the starter and every mutant are rejected, and never with ``internal_error``;
- ``run_catches`` (exercise.toml) names at least one mutant, each one of ``mutants/``, and Run rejects each: at
  least one visible ``test_example*`` test of its verdict does not pass (the commonest mistake fails Run, not
  only Submit);
- in trusted mode (``trusted=True``) each of those files gets the same verdict as in local mode; a mutant is
  judged there up to its first test that does not pass, which fails as it does locally (or passed locally, and the
  referee failed it: its checks ran otherwise than the reference's);
- the promise table (``promises.toml``, judge/promises.py): every promise of the statement has its unit-level
  tests and its mutants, every mutant is under one promise, and each fails one of its promise's tests.
"""

from __future__ import annotations

import ast
import os
import random
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import pyast
from .exercise import Exercise
from .isolation import Judging, judge_isolated
from .promises import table_problems, verdict_problems
from .verdict import Verdict

MIN_MUTANTS = 4
MIN_HINTS = 2
REFERENCE_RUN = "reference --run"  # the kind of the reference judged by Run


def alternatives(e: Exercise) -> list[Path]:
    """The alternative correct solutions of an exercise (``exercises/<slug>/alternatives/*.py``)."""
    return e.alternative_paths


@dataclass
class Report:
    exercise: Exercise
    problems: list[str] = field(default_factory=list)
    judged: int = 0  # judgings made
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # "<mode> <file>" -> verdict ("trusted ..." too)


def _has_example(e: Exercise) -> bool:
    try:
        tree = pyast.parse(e.tests_path.read_text(encoding="utf-8"))
    except SyntaxError:
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name.startswith("test_example") for n in tree.body)


def hint_problems(e: Exercise) -> list[str]:
    """What is wrong with the exercise's hints.md: nothing, or one line."""
    if not e.hints_path.is_file():
        return [f"hints.md: file not found (at least {MIN_HINTS} hints, separated by lines of ---)"]
    hints = e.hints
    empty = [str(i) for i, h in enumerate(hints, 1) if not h]
    if empty:
        return [f"hints.md: hint {', '.join(empty)} of {len(hints)} is empty (a --- line too many?)"]
    if len(hints) < MIN_HINTS:
        return [f"hints.md: {len(hints)} hint(s) (at least {MIN_HINTS} expected, separated by lines of ---)"]
    return []


def _why(v: Verdict) -> str:
    if v.message:
        return v.message.strip().splitlines()[0][:300]
    bad = [t for t in v.tests if t.status not in ("pass", "skip")]
    if bad:
        return f"{bad[0].name}: " + (bad[0].message.strip().splitlines() or [""])[0][:300]
    return ""


def _cuda_here() -> bool:
    if shutil.which("nvidia-smi") is None and not os.path.exists("/dev/nvidia0"):
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def judged_files(e: Exercise) -> list[tuple[str, str, str]]:
    """(kind, name, source) of every file ``check`` judges, the reference first: the reference, the alternative
    solutions, the starter, the mutants."""
    from .solution import reference_source

    files = [("reference", "reference.py", reference_source(e))]
    files += [("alternative", f"alternatives/{p.name}", p.read_text(encoding="utf-8")) for p in alternatives(e)]
    files += [("starter", "starter.py", e.starter)]
    files += [("mutant", f"mutants/{m.name}", m.read_text(encoding="utf-8")) for m in e.mutant_paths]
    return files


MUTANT_SEEDS = 10  # check judges every mutant under this many seeds (the hidden inputs): rejected under each


def mutant_seeds(seed: int, n: int) -> list[int]:
    """The ``n - 1`` seeds a mutant is judged under besides ``seed``: drawn from it, so a run is reproducible."""
    g = random.Random(seed)
    return [g.randrange(2**31) for _ in range(max(0, n - 1))]


def check_exercise(e: Exercise, modes: list[str] | None = None, trusted: bool = False,
                   seed: int | None = None, seeds: int = MUTANT_SEEDS) -> Report:
    """Validate one exercise (see the module's docstring); ``report.problems`` empty means valid. ``seed``: the
    hidden inputs' seed, the same for every file in every mode (default: a fresh one); every mutant is also judged
    locally under ``seeds - 1`` more (``mutant_seeds``) and must be rejected under each."""
    report = Report(e)
    problems = report.problems
    if not e.statement.strip():
        problems.append("statement.md is empty")
    if not e.explanation.strip():
        problems.append("explanation.md is empty")
    if not _has_example(e):
        problems.append("tests.py has no visible test_example* test")
    problems.extend(hint_problems(e))
    mutants = e.mutant_paths
    if len(mutants) < MIN_MUTANTS:
        problems.append(f"only {len(mutants)} mutant(s) in mutants/ (at least {MIN_MUTANTS} expected)")
    problems.extend(run_catches_problems(e))
    problems.extend(withheld_problems(e))
    problems.extend(table_problems(e))
    if modes is None:
        modes = ["local"] + (["gpu"] if "gpu" in e.modes and _cuda_here() else [])
    files = judged_files(e)
    reference = files[0][2]
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    for mode in modes:
        if mode not in e.modes:
            continue
        judgings = [Judging(e, src, name, mode, seed=seed) for _, name, src in files]
        judgings.append(Judging(e, reference, "reference.py", mode, True, seed=seed))
        more = [Judging(e, src, name, mode, seed=s, first_failure=True)  # rejected or not: the first failure tells
                for kind, name, src in files if kind == "mutant" for s in mutant_seeds(seed, seeds)] \
            if mode == "local" else []
        verdicts = [o.verdict for o in judge_isolated(judgings + more)]
        report.judged += len(judgings) + len(more)
        *per_file, ref_run = verdicts[:len(judgings)]
        for j, v in zip(more, verdicts[len(judgings):]):
            if v.status in ("accepted", "internal_error"):
                problems.append(f"[{mode}] {j.filename} is {v.status} under seed {j.seed}: every mutant must be "
                                f"rejected under each of {seeds} seeds (do the hidden tests catch it for some inputs "
                                "only?)")
        for (kind, name, _), v in zip(files, per_file):
            problems.extend(judged_problems(kind, name, v, mode, catches=name in e.run_catches))
            report.verdicts[f"{mode} {name}"] = v
        problems.extend(verdict_problems(e, {Path(name).stem: v for (kind, name, _), v in zip(files, per_file)
                                             if kind == "mutant"}, mode))
        report.verdicts[f"{mode} reference.py --run"] = ref_run
        problems.extend(judged_problems(REFERENCE_RUN, "reference.py", ref_run, mode))
        if trusted:
            from .trusted import judge_trusted

            # a mutant up to its first failure: that decides it (its other tests are compared locally)
            got = judge_trusted([replace(j, first_failure=kind == "mutant")
                                 for (kind, _, _), j in zip(files, judgings[:-1], strict=True)])
            report.judged += len(files) + 1
            for (kind, name, _), local, v in zip(files, per_file, got):
                report.verdicts[f"trusted {mode} {name}"] = v
                why = stopped_otherwise(v, local) if kind == "mutant" else \
                    "" if v.status == local.status else f"{v.status} in trusted mode but {local.status} locally"
                if why:
                    problems.append(f"[{mode}, trusted] {name}: {why}: {_why(v)}")
                elif v.trust.level != "trusted":
                    problems.append(f"[{mode}, trusted] {name}: the verdict says trust {v.trust.level!r}")
    return report


def stopped_otherwise(short: Verdict, full: Verdict) -> str:
    """How the verdict ``short`` of a mutant, judged in trusted mode up to its first test that does not pass,
    differs from its local verdict ``full``: "" when that test has the same status locally, or passed there and
    failed here (the referee also fails a test whose checks ran otherwise than the reference's); with no such
    test, when both verdicts have the same status."""
    if short.accepted or short.status == "internal_error":
        return f"{short.status} in trusted mode"
    bad = next((t for t in short.tests if t.status not in ("pass", "skip")), None)
    if bad is None:
        return "" if short.status == full.status else f"{short.status} in trusted mode but {full.status} locally"
    mine = next((t.status for t in full.tests if t.name == bad.name), "not run")
    if mine == bad.status or (mine == "pass" and bad.status == "fail"):
        return ""
    return f"{bad.name} is {bad.status} in trusted mode but {mine} locally"


def run_catches_problems(e: Exercise) -> list[str]:
    """What is wrong with the exercise's ``run_catches`` itself (none listed, or one that is not a mutant)."""
    where = "exercise.toml: field 'run_catches'"
    if not e.run_catches:
        return [f"{where} is empty: name the mutant(s) of the commonest mistake(s), which Run must reject"]
    mutants = {f"mutants/{m.name}" for m in e.mutant_paths}
    return [f"{where} lists {name!r}, which is not one of the mutants ({', '.join(sorted(mutants)) or 'none'})"
            for name in e.run_catches if name not in mutants]


def withheld_problems(e: Exercise) -> list[str]:
    """Each of the exercise's ``withheld`` functions is defined where it says (read from the engine's source, as
    trusted mode removes it: nothing imported)."""
    from .binding import TargetResolveError
    from .solution import module_file

    out = []
    for t in e.withheld:
        try:
            tree = pyast.parse(module_file(t.module).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, TargetResolveError) as err:
            out.append(f"exercise.toml: field 'withheld': {t.spec}: cannot read {t.module}: {err}")
            continue
        body = tree.body
        if t.owner is not None:
            body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == t.owner), [])
        if not any(isinstance(n, ast.FunctionDef) and n.name == t.name for n in body):
            out.append(f"exercise.toml: field 'withheld': {t.module} defines no function {t.qualname}")
    return out


def run_accepts(v: Verdict) -> bool:
    """Whether Run (the visible ``test_example*`` tests only) would accept the file of the full verdict ``v``:
    every visible test it ran passed. A verdict with no tests failed before any (it fails Run too)."""
    if not v.tests:
        return v.accepted
    return all(t.status in ("pass", "skip") for t in v.tests if t.name.startswith("test_example"))


def judged_problems(kind: str, name: str, v: Verdict, mode: str, catches: bool = False) -> list[str]:
    """What is wrong with the verdict ``v`` of the file ``name`` (one of ``judged_files``, ``kind`` as there,
    or ``REFERENCE_RUN``) judged in ``mode``: nothing, or one line (two for a mutant of ``run_catches``:
    ``catches``, whose visible tests must not all pass). ``check --browser`` says the same."""
    if kind == REFERENCE_RUN:
        return [] if v.accepted else [f"[{mode}] the reference is not accepted by Run (--run): {v.status}: {_why(v)}"]
    if kind in ("reference", "alternative"):
        return [] if v.accepted else [f"[{mode}] the {kind} {name} is not accepted: {v.status}: {_why(v)}"]
    if v.accepted or v.status == "internal_error":
        why = f": {_why(v)}" if v.status == "internal_error" else ""
        return [f"[{mode}] {name} is {v.status} (it must fail, and not with an internal error){why}"]
    if kind == "mutant" and catches and run_accepts(v):
        return [f"[{mode}] {name} (run_catches) is accepted by Run: every visible test_example* passes on it; "
                f"make a visible example catch it"]
    return []

"""An exercise's promise table (``exercises/<slug>/promises.toml``): each promise its statement makes, the unit-level
tests that check it, and the mutants that break it (each mutant breaks one promise: the one it is listed under).

    [[promise]]
    says = "_take hands out the last free page: exactly n free pages are enough for n"
    tests = ["test_exactly_n_free_pages"]
    mutants = ["raises_at_exactly_n"]

``check`` (judge/validate.py) holds an exercise to its table:

- every promise says something, names at least one test and at least one mutant;
- each test is a function of tests.py and unit-level: not one of the end-to-end tests (named ``test_engine_*``,
  ``test_example_engine_*`` or ``*same_tokens*``, as docs/judge.md asks, or calling judge.testing's ``engine()``),
  so the promise is checked where it is made, not only through the tokens coming out;
- each mutant is a file of mutants/, and every mutant of the exercise is under exactly one promise;
- judged, each mutant of a promise fails (or errors or times out in) at least one of that promise's tests.

Pure standard library, like the rest of the judge's core.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass

from . import pyast
from .exercise import Exercise
from .verdict import Verdict

FILE = "promises.toml"
END_TO_END = re.compile(r"^test_(example_)?engine|same_tokens")  # the end-to-end tests' names (docs/judge.md)
NOT_PASSED = frozenset({"fail", "error", "timeout"})


@dataclass(frozen=True)
class Promise:
    says: str
    tests: tuple[str, ...]
    mutants: tuple[str, ...]  # file names in mutants/ without .py


class PromiseError(ValueError):
    """promises.toml cannot be read as a table of promises."""


def load_promises(e: Exercise) -> list[Promise] | None:
    """The exercise's promises (None: it has no promises.toml); PromiseError saying what is malformed."""
    path = e.path / FILE
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise PromiseError(f"{FILE} is not valid TOML: {err}") from err
    unknown = set(data) - {"promise"}
    if unknown:
        raise PromiseError(f"{FILE}: unknown key(s) {', '.join(sorted(unknown))} (only [[promise]] tables)")
    rows = data.get("promise", [])
    if not isinstance(rows, list) or not rows:
        raise PromiseError(f"{FILE} has no [[promise]] table")
    out = []
    for i, row in enumerate(rows, 1):
        extra = set(row) - {"says", "tests", "mutants"}
        if extra:
            raise PromiseError(f"{FILE}: promise {i} has unknown key(s) {', '.join(sorted(extra))}")
        says = row.get("says")
        if not isinstance(says, str) or not says.strip():
            raise PromiseError(f"{FILE}: promise {i} has no 'says' (the statement's promise, in a sentence)")
        lists = {}
        for key in ("tests", "mutants"):
            value = row.get(key)
            if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
                raise PromiseError(f"{FILE}: promise {i} ({says[:60]!r}) needs '{key}', a non-empty list of names")
            lists[key] = tuple(v.removesuffix(".py") for v in value)
        out.append(Promise(says.strip(), lists["tests"], lists["mutants"]))
    return out


def _test_functions(e: Exercise) -> dict[str, ast.FunctionDef]:
    tree = pyast.parse(e.read("tests.py"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def _end_to_end(fn: ast.FunctionDef) -> bool:
    if END_TO_END.search(fn.name):
        return True
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name == "engine":  # judge.testing's engine(): the whole engine runs
                return True
    return False


def table_problems(e: Exercise) -> list[str]:
    """What is wrong with the table itself, before anything is judged."""
    try:
        promises = load_promises(e)
    except PromiseError as err:
        return [str(err)]
    if promises is None:
        return [f"{FILE} is missing: each promise of the statement, the unit-level tests that check it and the "
                "mutants that break it (judge/promises.py)"]
    problems = []
    tests = _test_functions(e)
    mutants = {p.stem for p in e.mutant_paths}
    under: dict[str, list[int]] = {}
    for i, p in enumerate(promises, 1):
        for t in p.tests:
            if t not in tests:
                problems.append(f"{FILE}: promise {i} names {t}, which is not a test of tests.py")
            elif _end_to_end(tests[t]):
                problems.append(f"{FILE}: promise {i} names {t}, which runs the engine end to end (engine()): "
                                "a promise needs a unit-level test")
        for m in p.mutants:
            if m not in mutants:
                problems.append(f"{FILE}: promise {i} names mutant {m}, which is not in mutants/")
            under.setdefault(m, []).append(i)
    for m in sorted(mutants):
        if m not in under:
            problems.append(f"{FILE}: mutants/{m}.py is under no promise (which promise does it break?)")
        elif len(under[m]) > 1:
            problems.append(f"{FILE}: mutants/{m}.py is under promises {under[m]}: a mutant breaks one promise")
    return problems


def verdict_problems(e: Exercise, verdicts: dict[str, Verdict], mode: str) -> list[str]:
    """Each promise's mutants, judged (``verdicts`` by mutant name without .py), fail one of its tests."""
    try:
        promises = load_promises(e) or []
    except PromiseError:
        return []  # said by table_problems
    problems = []
    for i, p in enumerate(promises, 1):
        for m in p.mutants:
            v = verdicts.get(m)
            if v is None:
                continue
            failed = [t.name for t in v.tests if t.status in NOT_PASSED]
            if not set(failed) & set(p.tests):
                problems.append(
                    f"[{mode}] promise {i} ({p.says[:70]!r}): mutants/{m}.py fails none of its tests "
                    f"({', '.join(p.tests)}); it fails {', '.join(failed) or 'no test'} "
                    f"({v.status}): a unit-level test must catch it")
    return problems

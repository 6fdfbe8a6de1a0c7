"""Trusted mode: a verdict that the learner's code cannot write.

Three processes; the learner's code runs in only one of them:

- the **referee** (this process) holds the plan: it draws the seed of the hidden inputs, starts the two
  others, and decides the verdict from what they observed. It never runs the learner's code.
- the **reference** process runs the exercise's tests with the engine's own code bound, on those
  inputs, and reports every check it made: the expected values.
- the **learner** process runs the same tests with the submission bound, on the same inputs. Its
  engine is a copy in which the targets' bodies are gone (``raise NotImplementedError``): no reference
  implementation exists in it to delegate to, steal or read from disk. Its copy of the exercise has
  no solution, mutants or explanation. The submission must pass ``judge.screen`` first and runs with
  restricted builtins. Expected values reach it only as ``HIDDEN``. Where the kernel allows, it runs in
  its own PID, network and mount namespaces, with the repository hidden, everything but its scratch
  folder read-only and every capability dropped (``judge.sandbox``). It reports observations, never a
  verdict: the channel it writes to carries plain values, and the referee alone compares them.

A test passes only if the learner's process ran it to the end and every check it made holds when the
referee evaluates it, with the hidden sides taken from the reference's observations, and the checks
ran as they did with the reference (the same lines, in the same order).

``judge_trusted`` is the layer's one entry. How the two sides run is its ``sides`` argument: here, by
default, two child processes of ``judge.isolation``; the GPU runner passes its own, which runs each side
in a Docker container (``prepare_learner_tree`` builds what the learner's container mounts) and hands
back both outcomes. The screen before and the decision after are the same in both places.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from . import pyast, sandbox
from .checks import HIDDEN, Observation, Site, compare, compile_tests, contains, fill_template
from .exercise import CHAPTERS_FILE, REPO_ROOT, Exercise
from .explain import describe_check
from .isolation import ChildSpec, Judging, Limits, Outcome, judge_isolated, local_spec
from .verdict import MESSAGE_CAP, TestResult, Trust, Verdict, cap

JUDGE_DIR = Path(__file__).resolve().parent
PUBLIC_FILES = ("exercise.toml", "statement.md", "starter.py", "tests.py")  # what the learner's copy holds
REFEREE_MEASURES = ["screen", "no-reference", "referee", "hidden-inputs"]


# ----------------------------------------------------------------------------------------------
# the learner's tree: a redacted engine, the judge, the exercise's public files


def redact(source: str, names: set[tuple[str | None, str]], why: str) -> str:
    """``source`` with the bodies of the functions ``names`` ((class or None, name)) replaced by a
    ``raise NotImplementedError``; line numbers are kept (the rest of the body becomes blank lines)."""
    tree = pyast.parse(source)
    lines = source.splitlines(keepends=True)
    spans: list[tuple[int, int, int]] = []  # (first body line, last line, indent) 1-based

    def visit(body: list[ast.stmt], owner: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and owner is None:
                visit(node.body, node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (owner, node.name) in names:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(node.body) > 1:
                    first = node.body[1]  # keep the docstring
                spans.append((first.lineno, node.end_lineno or first.lineno, first.col_offset))

    visit(tree.body, None)
    for start, end, indent in sorted(spans, reverse=True):
        lead = lines[start - 1][:indent]  # blank, or `def f(x): ` when the body starts on the def line
        lines[start - 1] = lead + f"raise NotImplementedError({why!r})\n"
        for i in range(start, end):
            lines[i] = "\n"
    return "".join(lines)


@dataclass
class LearnerTree:
    root: Path  # everything below is read-only for the learner's process, but scratch/
    scratch: Path  # its working directory and temporary folder
    exercise_path: Path
    stamp: tuple = ()  # what it was built from (``_Trees``)

    @property
    def code(self) -> Path:
        return self.root / "code"


def _engine_packages(exercise: Exercise) -> list[tuple[str, Path]]:
    """The engine packages a learner tree copies (``minisgl`` and those of the exercise's targets), with their
    folders."""
    out = []
    for package in sorted({"minisgl"} | {t.module.split(".")[0] for t in exercise.targets}):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(f"the engine package {package!r} of the exercise's targets cannot be found")
        out.append((package, Path(list(spec.submodule_search_locations)[0])))
    return out


def prepare_learner_tree(exercise: Exercise, root: str | Path) -> LearnerTree:
    """Build, under ``root``, what the learner's process sees: ``code/minisgl`` (the engine, the bodies of the
    targets and of the exercise's ``withheld`` functions removed), ``code/judge``, ``exercises/<slug>`` (public
    files only) and ``scratch/``."""
    root = Path(root)
    code = root / "code"
    # the compiled files come along: copied with their sources' times, they stay valid
    for package, folder in _engine_packages(exercise):
        shutil.copytree(folder, code / package)
    shutil.copytree(JUDGE_DIR, code / "judge")
    why = "the engine's own code for this target is not available in trusted judging"
    by_module: dict[str, set[tuple[str | None, str]]] = {}
    for t in exercise.targets + exercise.withheld:
        by_module.setdefault(t.module, set()).add((t.owner, t.name))
    for module, names in by_module.items():
        parts = module.split(".")
        path = code.joinpath(*parts).with_suffix(".py")
        if not path.is_file():
            path = code.joinpath(*parts, "__init__.py")
        path.write_text(redact(path.read_text(encoding="utf-8"), names, why), encoding="utf-8")
        for compiled in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
            compiled.unlink()  # it holds the engine's own code for the targets
    ex = root / "exercises" / exercise.slug
    ex.mkdir(parents=True)
    for name in PUBLIC_FILES:
        shutil.copyfile(exercise.path / name, ex / name)
    (ex / "explanation.md").write_text("(shown after solving; not available while judging)\n", encoding="utf-8")
    shutil.copyfile(exercise.path.parent / CHAPTERS_FILE, root / "exercises" / CHAPTERS_FILE)
    scratch = root / "scratch"
    scratch.mkdir()
    return LearnerTree(root=root, scratch=scratch, exercise_path=ex)


class _Trees:
    """Learner trees kept for the next trusted judging of the same exercise in this process (a runner's job
    server, ``check``, the test suite), so that the learner's warm child in it is kept too. Kept only where
    the learner's process runs in the mount sandbox, which leaves it nothing writable but ``scratch/`` (each
    judging's folder in it is removed after the judging: ``judge.child``); elsewhere each judging builds its
    own, as before. A tree is lent to one judging at a time; one whose exercise or engine files changed
    since it was built is removed, with the child kept in it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.root: str | None = None
        self.free: dict[tuple[str, str], list[tuple[tuple, LearnerTree]]] = {}  # (slug, path) -> (stamp, tree)
        self.count = 0

    @staticmethod
    def stamp(exercise: Exercise) -> tuple:
        """What the tree was built from, as (path, size, mtime) of every file: the engine packages, the judge,
        the exercise's public files."""
        roots = [JUDGE_DIR] + [folder for _, folder in _engine_packages(exercise)]
        out = []
        for root in roots:
            for d, dirs, files in os.walk(root):
                dirs[:] = sorted(x for x in dirs if x != "__pycache__")
                for f in sorted(files):
                    st = os.stat(os.path.join(d, f))
                    out.append((os.path.join(d, f), st.st_size, st.st_mtime_ns))
        for name in PUBLIC_FILES + (CHAPTERS_FILE,):
            path = exercise.path / name if name != CHAPTERS_FILE else exercise.path.parent / name
            st = os.stat(path)
            out.append((str(path), st.st_size, st.st_mtime_ns))
        return tuple(out)

    def _remove(self, tree: LearnerTree) -> None:
        from .isolation import end_kept_children

        end_kept_children(str(tree.scratch))
        shutil.rmtree(tree.root, ignore_errors=True)

    def take(self, exercise: Exercise) -> LearnerTree:
        key, stamp = (exercise.slug, str(exercise.path)), self.stamp(exercise)
        with self.lock:
            trees = self.free.setdefault(key, [])
            stale = [t for s, t in trees if s != stamp]
            fresh = [(s, t) for s, t in trees if s == stamp]
            self.free[key] = fresh[1:]
            if self.root is None:
                self.root = tempfile.mkdtemp(prefix="judge-trees-")
                os.chmod(self.root, 0o755)
                import atexit

                atexit.register(self.close)
            self.count += 1
            path = os.path.join(self.root, f"{exercise.slug}-{self.count}")
        for t in stale:
            self._remove(t)
        if fresh:
            return fresh[0][1]
        os.mkdir(path, 0o755)
        tree = prepare_learner_tree(exercise, path)
        tree.stamp = stamp
        return tree

    def give_back(self, exercise: Exercise, tree: LearnerTree) -> None:
        with self.lock:
            self.free.setdefault((exercise.slug, str(exercise.path)), []).append((tree.stamp, tree))

    def close(self) -> None:
        with self.lock:
            root, self.root, self.free = self.root, None, {}
        if root:
            shutil.rmtree(root, ignore_errors=True)


_TREES = _Trees()


@contextlib.contextmanager
def learner_tree(exercise: Exercise) -> Iterator[tuple[LearnerTree, bool]]:
    """A learner tree for one trusted judging: (tree, lasting), a kept one where the sandbox allows it
    (``_Trees``), else a fresh one removed after the judging."""
    if sandbox.namespaces_available(trusted=True):
        tree = _TREES.take(exercise)
        try:
            yield tree, True
        finally:
            _TREES.give_back(exercise, tree)
        return
    with tempfile.TemporaryDirectory(prefix="judge-trusted-") as tmp:
        os.chmod(tmp, 0o755)
        yield prepare_learner_tree(exercise, tmp), False


def _models_dir() -> str:
    from minisgl.testing import tiny_models_dir

    return str(tiny_models_dir().resolve())  # a link into a hidden folder would lead nowhere


def _learner_spec(tree: LearnerTree, lasting: bool = False) -> ChildSpec:
    """How the learner's process starts: the tree's code first, a minimal environment, and the sandbox
    where the kernel allows it (``lasting``: the tree is kept, and so may the child be)."""
    env = sandbox.learner_env(str(tree.scratch), str(tree.exercise_path.parent), _models_dir())
    python = sandbox.python_path()
    measures = ["process", "python-isolated", "private-dir"]
    spec = ChildSpec(sys_path=[str(tree.code)] + python, env=env, workdir=str(tree.scratch), measures=measures,
                     lasting=lasting)
    if sandbox.namespaces_available(trusted=True):
        import sys

        hide = [str(REPO_ROOT), "/root", "/home", "/tmp", "/var/tmp", "/srv", "/mnt", "/media", "/opt", "/run"]
        hide += [str(Path(h).resolve()) for h in (os.environ.get("MINISGL_EXERCISES"),) if h]
        keep = [sys.base_prefix, sys.prefix, *python, str(tree.root), _models_dir()]
        spec.namespaces = True
        spec.sandbox = {"writable": str(tree.scratch), "hide": hide, "keep": keep}
        spec.measures = measures + ["pid-namespace", "net-namespace", "mount-sandbox", "no-capabilities"]
    else:
        spec.measures = measures + ["process-group"]
    return spec


# ----------------------------------------------------------------------------------------------
# deciding


def _check_test(mine: list[dict], theirs: list[dict], sites: dict[int, Site], tests_source: str, tests_file: str,
                complete: bool) -> str | None:
    """The first check of a test that does not hold (None: all hold). ``complete``: the learner's process
    says the test ran to its end, so every check of the reference's must have run too. Otherwise the
    test failed there anyway, and what matters is whether a check before that point failed already
    (with an expected value, the learner's process cannot tell; local judging would have stopped there)."""
    try:
        got = [Observation.from_wire(d) for d in mine]
        want = [Observation.from_wire(d) for d in theirs]
    except (KeyError, TypeError, ValueError) as e:
        return f"Your process reported checks the referee cannot read ({type(e).__name__}): this test does not count."
    for i, w in enumerate(want):
        if i >= len(got):
            if not complete:
                return None
            return (f"The checks of this test stopped early: {len(got)} of the {len(want)} the reference makes ran "
                    f"(the next one is at tests.py, line {w.line}).")
        g = got[i]
        if g.ok is False or (g.line, g.op) != (w.line, w.op) and got[-1].ok is False:
            # it failed in the learner's process on its own values (the test stopped there; where its path left
            # the reference's before that, the failure says more than the path): as local judging says it
            g = g if g.ok is False else got[-1]
            site = replace(sites.get(g.line) or Site(line=g.line, op=g.op, left="", right=""))
            return describe_check(site, g.left, g.right, g.said, {}, tests_source, tests_file)
        if (g.line, g.op) != (w.line, w.op):
            path = (f"The checks ran differently from the reference's: check {i + 1} was at tests.py, line {g.line}, "
                    f"where the reference's was at line {w.line}.")
            later = _next_hidden_pair(got, want, i)
            failed = later and _failed_check(*later, sites, tests_source, tests_file)
            return f"{failed}\n({path[:-1]}: your code took another path before this check.)" if failed else path
        failed = _failed_check(g, w, sites, tests_source, tests_file)
        if failed:
            return failed
    if len(got) > len(want) and complete:
        return f"This test made {len(got)} checks where the reference makes {len(want)}: it ran differently."
    return None


def _failed_check(g: Observation, w: Observation, sites: dict[int, Site], tests_source: str,
                  tests_file: str) -> str | None:
    """The message of check ``g`` (the learner's) against the reference's ``w`` at the same place, with the
    expected values taken from ``w``; None if it holds."""
    left = w.left if contains(g.left, HIDDEN) else g.left
    right = w.right if contains(g.right, HIDDEN) else g.right
    try:
        ok = compare(w.op, left, right, w.opts)
    except (TypeError, ValueError) as e:
        ok, note = False, f"(these values cannot be compared: {e})"
    else:
        note = ""
    if ok:
        return None
    site = replace(sites.get(w.line) or Site(line=w.line, op=w.op, left="", right=""))
    # the message's {fields} from the learner's process: shown, never decided on
    return describe_check(site, left, right, fill_template(site.template, g.names), {}, tests_source, tests_file,
                          note=note)


def _next_hidden_pair(got: list[Observation], want: list[Observation], i: int
                      ) -> tuple[Observation, Observation] | None:
    """Where the two sides' paths part at check ``i``: the learner's next check with an expected value (the
    referee decides it) and the reference's check at the same line, the same occurrence of it since ``i``."""
    j = next((j for j in range(i, len(got)) if got[j].ok is None), None)
    if j is None:
        return None
    g = got[j]
    nth = sum(1 for x in got[i:j] if (x.line, x.op) == (g.line, g.op))  # that line's earlier checks on this path
    at_line = [w for w in want[i:] if (w.line, w.op) == (g.line, g.op)]
    return (g, at_line[nth]) if nth < len(at_line) else None


def _decide(exercise: Exercise, reference: Outcome, learner: Outcome, measures: list[str],
            first_failure: bool = False) -> Verdict:
    """The verdict of a trusted judging, from the reference's and the learner's observations; with
    ``first_failure`` (the learner's process stopped at its first test that did not pass), up to the first test
    that does not pass, as locally."""
    ref, mine = reference.verdict, learner.verdict
    trust = Trust(level="trusted", measures=sorted(set(measures) | set(REFEREE_MEASURES)))
    v = Verdict(status="accepted", exercise=exercise.slug, mode=mine.mode, run=mine.run, seed=ref.seed,
                trust=trust, env=mine.env, output=mine.output, metrics=dict(mine.metrics), ms=mine.ms)
    if mine.status == "compile_error":
        v.status, v.message = "compile_error", mine.message
        return v.finalize()
    if not ref.accepted:
        v.status = "internal_error"
        v.message = cap("The reference solution failed on this judging's inputs (an exercise bug, not yours): "
                        f"{ref.status}: {ref.message or _first_problem(ref)}", MESSAGE_CAP)
        return v.finalize()
    if mine.status in ("runtime_error", "timeout", "internal_error") and not mine.tests:
        v.status, v.message = mine.status, mine.message
        if mine.status == "internal_error" and learner.reported:
            # the learner's process says "internal error": it may have forged that; it is not ours to own
            v.status = "runtime_error"
            v.message = "Your process reported a failure of the judge, which the referee does not take on trust:\n" \
                        + mine.message
        return v.finalize()
    v.message = mine.message
    tests_file = str(exercise.tests_path)
    tests_source = exercise.tests_path.read_text(encoding="utf-8")
    sites: dict[int, Site] = {}
    try:
        for site in compile_tests(tests_file, tests_source)[1]:
            sites.setdefault(site.line, site)
    except SyntaxError:  # the reference ran them, so this cannot happen; a check is explained without its site
        pass
    reported = {t.name: t for t in mine.tests}
    for want in ref.tests:
        got = reported.get(want.name)
        result = TestResult(name=want.name, status="pass", doc=want.doc, visible=want.visible)
        if want.status == "skip":
            result.status, result.message = "skip", want.message
        elif got is None:
            result.status = "error"
            result.message = "Your process did not report this test (it ended, or its report was incomplete)."
        elif got.status == "skip":
            if got.message.startswith("Not run"):  # the learner's process ended in an earlier test
                result.status, result.message = "skip", got.message
            else:
                result.status, result.message = "error", "Your process skipped this test; the reference ran it."
        else:
            result.status, result.message, result.output, result.ms = got.status, got.message, got.output, got.ms
            why = _check_test(learner.checks.get(want.name, []), reference.checks.get(want.name, []), sites,
                              tests_source, tests_file, complete=got.status == "pass")
            if why:
                from .testing import draw_note

                result.status, result.message = "fail", cap(why + draw_note(ref.seed, want.name), MESSAGE_CAP)
        v.tests.append(result)
        if first_failure and result.status not in ("pass", "skip"):
            break
    return v.finalize()


def _first_problem(v: Verdict) -> str:
    for t in v.tests:
        if t.status not in ("pass", "skip"):
            return f"{t.name}: {(t.message.splitlines() or [''])[0][:300]}"
    return ""


# ----------------------------------------------------------------------------------------------
# the referee


@dataclass
class Sides:
    """What the two sides of a trusted judging observed: the reference's outcome, one outcome per learner
    judging (in order), and the walls the learner's side had (for the verdict's trust)."""

    reference: Outcome
    learners: list[Outcome]
    measures: list[str]


RunSides = Callable[[Judging, list[Judging]], Sides]  # (the reference's judging, the learner's) -> Sides


def _screen(judging: Judging) -> Verdict | None:
    """The screen, run here before any process starts (compiling runs nothing of the submission); the
    learner's process screens again. A ``compile_error`` verdict, or None when the file may run."""
    from .submission import CompileError, compile_submission

    exercise = judging.exercise
    try:
        compile_submission(judging.source or "", judging.filename, True,
                           {t.owner for t in exercise.targets if t.owner}, tuple(exercise.trusted_imports))
    except CompileError as e:
        return Verdict.failure("compile_error", str(e), exercise=exercise.slug, mode=judging.mode,
                               run=judging.run_only, trust=Trust(level="trusted", measures=["screen", "referee"]))
    return None


def _local_sides(reference: Judging, learners: list[Judging], *, limits: Limits) -> Sides:
    """Both sides on this machine: the reference in a child of the repository's judge, the learner's
    judgings in children that see only the learner's tree (``prepare_learner_tree``), with the walls the
    kernel allows. One learner judging's time is the whole judging's."""
    t0 = time.monotonic()
    results: dict[str, list[Outcome]] = {}
    with learner_tree(reference.exercise) as (tree, lasting):
        spec = _learner_spec(tree, lasting)
        mine = [replace(j, exercise_path=str(tree.exercise_path)) for j in learners]

        def run(key: str, js: list[Judging], s: ChildSpec) -> None:
            results[key] = judge_isolated(js, limits=limits, spec=s)

        threads = [threading.Thread(target=run, args=("reference", [reference], local_spec())),
                   threading.Thread(target=run, args=("learner", mine, spec))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    got = Sides(results["reference"][0], results["learner"], spec.measures)
    if len(got.learners) == 1:
        got.learners[0].verdict.ms = round((time.monotonic() - t0) * 1000, 1)
    return got


def judge_trusted(judgings: list[Judging], *, limits: Limits | None = None,
                  sides: RunSides | None = None) -> list[Verdict]:
    """The trusted layer's one entry: a verdict per judging, in order (see the module's docstring).

    Every judging is of one exercise, in one mode, Run or Submit alike, and all are judged against one
    reference run, on the same hidden inputs (their ``seed``, drawn here when None): several at once are
    an author's own files, as ``check`` judges them; a learner's submission is judged alone. Each is
    screened first; those that pass run on ``sides`` (by default ``_local_sides`` with ``limits``,
    the exercise's when None), and the referee decides each from the two sides' observations."""
    if not judgings:
        return []
    first = judgings[0]
    exercise = first.exercise
    for j in judgings:
        if (j.exercise is not exercise or j.mode != first.mode or j.run_only != first.run_only
                or j.seed != first.seed or j.source is None):
            raise ValueError("judge_trusted judges submissions (a source each) of one exercise, in one mode, "
                             "Run or Submit alike, on one seed")
    seed = first.seed if first.seed is not None else random.SystemRandom().randrange(2**31)
    verdicts = [_screen(j) for j in judgings]
    todo = [replace(j, seed=seed, role="learner") for j, v in zip(judgings, verdicts, strict=True) if v is None]
    if not todo:
        return [v for v in verdicts if v is not None]
    reference = Judging(exercise, None, "reference.py", first.mode, first.run_only, seed, role="reference")
    run = sides or functools.partial(_local_sides, limits=limits or Limits.for_exercise(exercise, first.mode))
    got = run(reference, todo)
    if len(got.learners) != len(todo):
        raise RuntimeError(f"the sides reported {len(got.learners)} outcomes for {len(todo)} submissions")
    decided = iter([_decide(exercise, got.reference, o, got.measures, j.first_failure)
                    for j, o in zip(todo, got.learners, strict=True)])
    return [v if v is not None else next(decided) for v in verdicts]

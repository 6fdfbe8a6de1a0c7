"""The judge's in-process core on a toy exercise: loading, binding, failure messages, the verdict rules.

The toy 'engine' (tests/fixtures/toy/toyengine) keeps these tests fast and independent of minisgl;
the real exercises are judged in tests/test_bank.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import toyengine
import toyengine.user

from judge.binding import Binding, resolve_targets
from judge.checks import plain
from judge.exercise import ExerciseError, Target, list_exercises, load_chapters, load_exercise
from judge.explain import first_difference, fmt_value
from judge.harness import judge_source
from judge.solution import reference_source
from judge.submission import load_submission
from judge.verdict import TestResult, Verdict

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "tests" / "fixtures" / "toy"

TOY_EX = TOY / "exercises" / "toy-counter"

# a correct submission for the toy exercise (its line numbers are asserted on)
GOOD = (TOY / "good_submission.py").read_text()


@pytest.fixture(scope="module")
def toy():
    return load_exercise(TOY_EX)


def with_body(scale_body: str) -> str:
    return GOOD.replace("    return [v * k for v in values]\n", scale_body)


# -- exercises ----------------------------------------------------------------------------------


def write_exercise(tmp_path: Path, toml: str, slug: str = "bad-one") -> Path:
    d = tmp_path / slug
    shutil.copytree(TOY_EX, d)
    shutil.copyfile(TOY_EX.parent / "chapters.toml", tmp_path / "chapters.toml")
    (d / "exercise.toml").write_text(toml)
    return d


@pytest.mark.parametrize(
    "toml, field",
    [
        ('chapter = "toy"\ndifficulty = "easy"\ntargets = ["toyengine:scale"]\n', "'title'"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "easy"\ntargets = "toyengine:scale"\n', "'targets'"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "easy"\ntargets = ["toyengine.scale"]\n', "'targets'[0]"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "hardest"\ntargets = ["toyengine:scale"]\n', "'difficulty'"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "easy"\ntargets = ["toyengine:scale"]\nmodes = ["tpu"]\n',
         "'modes'[0]"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "easy"\ntargets = ["toyengine:scale"]\ntime_limit = "5"\n',
         "'time_limit'"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "easy"\ntargets = ["toyengine:scale"]\ncolour = 1\n', "colour"),
        ('title = "t"\nchapter = "nope"\ndifficulty = "easy"\ntargets = ["toyengine:scale"]\n', "'chapter'"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "easy"\ntargets = ["toyengine:scale"]\n'
         'run_catches = "mutants/off_by_one.py"\n', "'run_catches'"),
        ('title = "t"\nchapter = "toy"\ndifficulty = "easy"\ntargets = ["toyengine:scale"]\nrun_catches = [1]\n',
         "'run_catches'[0]"),
        ('title = "t\nchapter', "invalid TOML"),
    ],
)
def test_malformed_exercise_names_file_and_field(tmp_path, toml, field):
    d = write_exercise(tmp_path, toml)
    with pytest.raises(ExerciseError) as e:
        load_exercise(d)
    assert str(d / "exercise.toml") in str(e.value)
    assert field in str(e.value)


def test_missing_files_and_bad_slug(tmp_path):
    d = write_exercise(tmp_path, (TOY_EX / "exercise.toml").read_text())
    (d / "statement.md").unlink()
    with pytest.raises(ExerciseError, match="statement.md: file not found"):
        load_exercise(d)
    bad = write_exercise(tmp_path, (TOY_EX / "exercise.toml").read_text(), slug="Bad_Slug")
    with pytest.raises(ExerciseError, match="not a slug"):
        load_exercise(bad)


def test_chapters_carry_the_books_numbering(tmp_path):
    """chapters.toml's `book`: the book's chapter number, which is the number the course shows (list, site)."""
    numbers = {c.id: (c.number, c.book) for c in load_chapters(ROOT / "exercises")}
    assert numbers["tiny-engine"] == (0, 0)  # chapter 0: the book starts from a whole engine in one file
    assert numbers["request-lifecycle"] == (1, 1) and numbers["overlap-scheduling"] == (11, 11)
    assert numbers["gpu-attention"] == (17, 17) and numbers["cuda-graph"] == (18, 18)
    assert numbers["messages"] == (12, 12) and numbers["api-server"] == (15, 15) and numbers["benchmarking"] == (21, 21)
    two = ('[[chapter]]\nid = "a"\ntitle = "A"\ncovers = "a"\nbook = 5\n'
           '[[chapter]]\nid = "b"\ntitle = "B"\ncovers = "b"\n')
    for second, message in (("book = 5", "must come after book 5"), ("book = 3", "must come after book 5")):
        (tmp_path / "chapters.toml").write_text(two + second + "\n")
        with pytest.raises(ExerciseError, match=message):
            load_chapters(tmp_path)
    for book, message in (("-1", "0 or more"), ('"18"', "'book' must be int")):
        (tmp_path / "chapters.toml").write_text(f'[[chapter]]\nid = "x"\ntitle = "X"\ncovers = "x"\nbook = {book}\n')
        with pytest.raises(ExerciseError, match=message):
            load_chapters(tmp_path)


@pytest.mark.parametrize("hints, says", [
    (None, "hints.md: file not found"),
    ("", "hints.md: 0 hint(s)"),
    ("  \n\n", "hints.md: 0 hint(s)"),
    ("Only one nudge.\n", "hints.md: 1 hint(s)"),
    ("First.\n---\n\n---\nThird.\n", "hint 2 of 3 is empty"),
    ("First.\n---\nSecond.\n---\n", "hint 3 of 3 is empty"),
])
def test_check_refuses_missing_or_empty_hints(tmp_path, hints, says):
    """On a copy of a real exercise, ``check``'s own reading (no judging: no modes) refuses bad hints."""
    from judge.validate import check_exercise

    real = ROOT / "exercises" / "graph-bs-list"
    d = tmp_path / real.name
    shutil.copytree(real, d)
    shutil.copyfile(real.parent / "chapters.toml", tmp_path / "chapters.toml")
    assert check_exercise(load_exercise(d), modes=[]).problems == []  # the copy as it is: valid
    if hints is None:
        (d / "hints.md").unlink()
    else:
        (d / "hints.md").write_text(hints, encoding="utf-8")
    problems = check_exercise(load_exercise(d), modes=[]).problems
    assert len(problems) == 1 and says in problems[0], problems


def test_run_catches_loads_without_its_files(tmp_path):
    """load_exercise reads run_catches as given (trusted mode loads exercises without mutants/); check judges it."""
    d = write_exercise(tmp_path, (TOY_EX / "exercise.toml").read_text())
    shutil.rmtree(d / "mutants")
    assert load_exercise(d).run_catches == ["mutants/off_by_one.py"]


def _graph_bs_list_with(tmp_path, mutants: tuple[str, ...]):
    """A copy of graph-bs-list under ``tmp_path`` with only ``mutants`` and no alternatives: its folder, and its
    exercise.toml's text without the run_catches line."""
    real = ROOT / "exercises" / "graph-bs-list"
    d = tmp_path / real.name
    shutil.copytree(real, d)
    shutil.copyfile(real.parent / "chapters.toml", tmp_path / "chapters.toml")
    shutil.rmtree(d / "alternatives", ignore_errors=True)
    for m in (d / "mutants").glob("*.py"):
        if m.stem not in mutants:
            m.unlink()
    _keep_promises(d, {m: m for m in mutants})
    toml = (d / "exercise.toml").read_text()
    return d, "\n".join(line for line in toml.splitlines() if not line.startswith("run_catches"))


def _keep_promises(d, under: dict[str, str]) -> None:
    """Rewrite the copy's promises.toml for the mutants it keeps: ``under`` maps each kept (or added) mutant to
    the mutant whose promise it goes under; promises left without a mutant are dropped."""
    import tomllib

    rows = tomllib.loads((d / "promises.toml").read_text())["promise"]
    out = []
    for row in rows:
        kept = [m for m, beside in under.items() if beside in row["mutants"]]
        if kept:
            out.append(f"[[promise]]\nsays = {json.dumps(row['says'])}\ntests = {json.dumps(row['tests'])}\n"
                       f"mutants = {json.dumps(kept)}\n")
    (d / "promises.toml").write_text("\n".join(out))


def test_check_refuses_run_catches_that_are_none_unknown_or_accepted_by_run(tmp_path):
    """On a copy of graph-bs-list with four mutants: an empty run_catches, an entry that is no mutant, and a mutant
    whose visible examples all pass (memory_in_gb: only hidden tests see it) are problems; one that Run rejects
    (powers_of_two) is not."""
    from judge.validate import check_exercise

    d, text = _graph_bs_list_with(tmp_path, ("memory_in_gb", "powers_of_two", "descending", "ceiling_excluded"))
    toml = d / "exercise.toml"
    toml.write_text(text + "\nrun_catches = []\n")
    problems = check_exercise(load_exercise(d), modes=[]).problems
    assert len(problems) == 1 and "'run_catches' is empty" in problems[0], problems

    listed = '["mutants/memory_in_gb.py", "mutants/powers_of_two.py", "mutants/nope.py"]'
    toml.write_text(text + f"\nrun_catches = {listed}\n")
    problems = check_exercise(load_exercise(d), modes=["local"], seed=4321).problems
    assert len(problems) == 2, problems
    assert "'mutants/nope.py', which is not one of the mutants" in problems[0], problems
    assert "[local] mutants/memory_in_gb.py (run_catches) is accepted by Run" in problems[1], problems


def test_check_judges_every_mutant_under_ten_seeds(tmp_path):
    """A mutant that is wrong only for some hidden inputs (here: one seed in three) is rejected under the bank's
    seed but accepted under others: check judges every mutant under MUTANT_SEEDS seeds and says so; judged under
    one seed it passes unnoticed."""
    from judge.validate import MUTANT_SEEDS, check_exercise

    d, text = _graph_bs_list_with(tmp_path, ("powers_of_two", "descending", "ceiling_excluded"))
    (d / "mutants" / "lucky.py").write_text(
        "from judge.testing import RUN, original\n\n\n"
        "def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):\n"
        "    good = original('minisgl.engine.graph:make_graph_bs_list')(cuda_graph_bs, cuda_graph_max_bs, is_cuda,\n"
        "                                                                free_memory)\n"
        "    return good if RUN.seed % 3 else list(reversed(good))  # wrong for one seed in three\n")
    (d / "exercise.toml").write_text(text + '\nrun_catches = ["mutants/powers_of_two.py"]\n')
    _keep_promises(d, {"powers_of_two": "powers_of_two", "descending": "descending",
                       "ceiling_excluded": "ceiling_excluded", "lucky": "descending"})  # lucky: the order, reversed
    assert MUTANT_SEEDS == 10
    assert check_exercise(load_exercise(d), modes=["local"], seed=4320, seeds=1).problems == []
    problems = check_exercise(load_exercise(d), modes=["local"], seed=4320).problems
    assert problems and all("mutants/lucky.py is accepted under seed" in p for p in problems), problems



def test_check_holds_an_exercise_to_its_promise_table(tmp_path):
    """Each promise needs a unit-level test and a mutant; every mutant is under one promise; and judged, each
    mutant fails one of its own promise's tests, not only some other test (a copy of graph-bs-list with three
    mutants: its promises 'multiples of 8', 'the ceiling itself', 'only sizes <= the ceiling' and 'ascending')."""
    from judge.validate import check_exercise

    kept = ("powers_of_two", "ceiling_excluded", "small_sizes_unfiltered", "descending")
    d, text = _graph_bs_list_with(tmp_path, kept)
    (d / "exercise.toml").write_text(text + '\nrun_catches = ["mutants/powers_of_two.py"]\n')
    table = d / "promises.toml"
    good = table.read_text()
    assert check_exercise(load_exercise(d), modes=["local"], seed=4321, seeds=1).problems == []

    # powers_of_two listed under 'ascending': it fails the multiples-of-8 tests, not test_ascending
    _keep_promises(d, {**{m: m for m in kept}, "powers_of_two": "descending"})
    problems = check_exercise(load_exercise(d), modes=["local"], seed=4321, seeds=1).problems
    assert len(problems) == 1 and problems[0].startswith(
        "[local] promise 3 ('The list is ascending.'): mutants/powers_of_two.py fails none of its tests "
        "(test_ascending); it fails test_example_ceiling_20, "), problems

    cases = {
        good.replace('"test_ascending"', '"test_engine_records_these_sizes"'): "runs the engine end to end",
        good.replace('"test_ascending"', '"test_nothing"'): "test_nothing, which is not a test of tests.py",
        good.rsplit("[[promise]]", 1)[0]: "mutants/descending.py is under no promise",  # 'ascending' gone
        good.replace('["descending"]', '["descending", "powers_of_two"]'): "powers_of_two.py is under promises [1, 4]",
        good.replace('["descending"]', '["descending", "gone"]'): "names mutant gone, which is not in mutants/",
        good.replace('mutants = ["descending"]', "mutants = []"): "needs 'mutants', a non-empty list",
        good + '\n[[promise]]\nsays = ""\ntests = ["test_ascending"]\nmutants = ["descending"]\n': "has no 'says'",
        None: "promises.toml is missing",
    }
    for case, says in cases.items():
        if case is None:
            table.unlink()
        else:
            table.write_text(case)
        problems = check_exercise(load_exercise(d), modes=[]).problems
        assert len(problems) == 1 and says in problems[0], (says, problems)

def test_run_accepts_reads_the_visible_tests_of_a_full_verdict():
    from judge.validate import judged_problems, run_accepts
    from judge.verdict import TestResult, Verdict

    def verdict(example: str, hidden: str) -> Verdict:
        tests = [TestResult("test_example_a", "pass"), TestResult("test_example_b", example),
                 TestResult("test_c", hidden)]
        return Verdict(status="wrong_answer", tests=tests)

    assert run_accepts(verdict("pass", "fail")) and not run_accepts(verdict("timeout", "pass"))
    assert not run_accepts(Verdict(status="compile_error"))  # failed before any test: Run fails too
    assert judged_problems("mutant", "mutants/m.py", verdict("pass", "fail"), "local") == []  # not in run_catches
    assert "accepted by Run" in judged_problems("mutant", "mutants/m.py", verdict("pass", "fail"), "gpu",
                                                catches=True)[0]
    assert judged_problems("mutant", "mutants/m.py", verdict("error", "fail"), "gpu", catches=True) == []


def test_hints_are_split_on_lines_of_dashes(toy):
    from judge.exercise import split_hints

    assert split_hints("Read *this*.\n\n---\nThen:\n\n    code\n --- \nLast.") == \
        ["Read *this*.", "Then:\n\n    code", "Last."]
    assert split_hints("") == [] and toy.hints == []  # no hints.md: none


def test_toy_exercise_loads(toy):
    assert toy.slug == "toy-counter"
    assert [t.qualname for t in toy.targets] == ["scale", "Counter.incr", "Counter.starting_at"]
    assert len(toy.mutant_paths) == 3
    assert [e.slug for e in list_exercises(TOY / "exercises")] == ["toy-counter"]
    assert Target.parse("a.b:C.d") == Target("a.b:C.d", "a.b", "C", "d")


def test_real_exercises_load():
    slugs = [e.slug for e in list_exercises(ROOT / "exercises")]
    graphs = ["graph-bs-list", "graph-capture-buffer", "graph-pad-and-replay", "torch-backend-graph-hooks",
              "graph-capture-loop"]
    assert [s for s in slugs if s in graphs] == graphs  # in course order, among the rest of the bank
    assert len(slugs) == len(set(slugs))


# -- binding -------------------------------------------------------------------------------------


def test_reference_is_the_engine_source(toy):
    src = reference_source(toy)
    assert "class Counter:" in src and "def incr(self, by: int = 1) -> int:" in src
    assert "return [v * k for v in values]" in src
    assert src.startswith('"""Toy starter."""')



def test_the_reference_is_the_same_where_the_engine_cannot_be_imported():
    """The site's image has the engine's files but no torch: every exercise's reference is read from the files
    (ast) and equals what inspect.getsource gives where the engine imports (the /solution endpoint, similarity)."""
    here = {e.slug: reference_source(e) for e in list_exercises() if not e.solution_path.is_file()}
    script = ("import json, sys; sys.modules['torch'] = None\n"  # `import torch` raises ImportError
              "from judge.exercise import list_exercises\nfrom judge.solution import reference_source\n"
              "print(json.dumps({e.slug: reference_source(e) for e in list_exercises()"
              " if not e.solution_path.is_file()}))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    there = json.loads(out.stdout)
    assert len(here) >= 25 and there == here

def test_bind_and_restore(toy):
    originals = resolve_targets(toy.targets)
    before = (toyengine.scale, toyengine.user.scale, toyengine.Counter.__dict__["incr"],
              toyengine.Counter.__dict__["starting_at"])
    sub = load_submission(GOOD.replace("v * k", "v * k + 100"), originals)
    b = Binding(originals)
    b.bind(sub)
    try:
        assert toyengine.scale([1], 1) == [101]
        assert toyengine.user.scale([1], 1) == [101], "from-imports are rebound too"
        assert toyengine.Counter.starting_at(2).incr(3) == 5
    finally:
        b.restore()
    after = (toyengine.scale, toyengine.user.scale, toyengine.Counter.__dict__["incr"],
             toyengine.Counter.__dict__["starting_at"])
    assert after == before


def test_judging_leaves_the_engine_untouched(toy):
    before = (toyengine.scale, toyengine.user.scale, dict(toyengine.Counter.__dict__))
    judge_source(toy, GOOD.replace("v * k", "v * k + 1"))
    assert (toyengine.scale, toyengine.user.scale, dict(toyengine.Counter.__dict__)) == before
    assert "submission" not in sys.modules


@pytest.mark.parametrize(
    "source, expected",
    [
        (GOOD.replace("def incr(self, by=1):", "def incr(self, by=1)"), ["line 7", "SyntaxError", "expected ':'"]),
        (GOOD.replace("def incr(self, by=1):", "def incr(self, amount=1):"),
         ["line 7", "wrong signature for Counter.incr", "(self, by)", "(self, amount)"]),
        (GOOD.replace("def scale(values, k):", "def scale(values):"), ["wrong signature for scale"]),
        (GOOD.replace("    def incr(self, by=1):\n        self.n += by\n        return self.n\n", ""),
         ["Counter.incr is missing", "def incr(self, by: int = 1) -> int"]),
        (GOOD.replace("def scale(", "def scale_it("), ["target scale is missing"]),
        (GOOD.replace("    @classmethod\n", ""), ["Counter.starting_at must be a classmethod"]),
        ("def incr(self, by=1):\n    return 1\n" + GOOD.split("class Counter")[0],
         ["Counter.incr is missing", "put it inside the class"]),
    ],
)
def test_compile_errors_say_which_target_and_where(toy, source, expected):
    v = judge_source(toy, source, filename="mine.py")
    assert v.status == "compile_error"
    assert v.tests == [] and v.passed == 0
    assert "mine.py" in v.message
    for text in expected:
        assert text in v.message


def test_helper_methods_and_zero_argument_super(toy):
    source = GOOD.replace(
        "    def incr(self, by=1):\n        self.n += by\n        return self.n\n",
        "    def incr(self, by=1):\n        return self._bump(by)\n\n"
        "    def _bump(self, by):\n        self.n += by\n        return self.n\n\n"
        "    def __repr__(self):\n        return super().__repr__()\n",
    )
    v = judge_source(toy, source)
    assert v.status == "accepted", v.to_json(indent=1)
    assert not hasattr(toyengine.Counter, "_bump"), "helpers are removed after the run"


# -- running tests and the verdict ---------------------------------------------------------------


def test_reference_accepted_with_env_and_metrics(toy):
    v = judge_source(toy, reference_source(toy), filename="reference.py")
    assert v.status == "accepted"
    assert (v.passed, v.failed, v.skipped, v.total) == (4, 0, 1, 5)
    assert v.env.python and v.env.torch and v.env.device in ("cpu", "cuda")
    assert v.metrics == {"toy_metric": 1.5}
    gpu = v.tests[-1]
    assert gpu.status == "skip" and "CUDA" in gpu.message
    assert [t.visible for t in v.tests] == [True, False, False, False, False]
    assert v.tests[0].doc == "scale multiplies every value."


def test_run_only_runs_the_examples(toy):
    v = judge_source(toy, reference_source(toy), run_only=True)
    assert [t.name for t in v.tests] == ["test_example_scale"]
    assert v.status == "accepted" and v.run


def test_starter_is_a_runtime_error_in_the_learners_frame(toy):
    v = judge_source(toy, toy.starter, filename="starter.py")
    assert v.status == "runtime_error"
    msg = v.tests[0].message
    assert 'File "starter.py", line 8, in scale' in msg and "NotImplementedError" in msg
    assert 'File "tests.py", line 9' in msg
    assert "harness.py" not in msg, "the judge's own frames are trimmed"


def test_assertion_message_shows_line_values_and_first_difference(toy):
    v = judge_source(toy, (TOY_EX / "mutants" / "tensor_only.py").read_text())
    assert v.status == "wrong_answer"
    t = next(t for t in v.tests if t.name == "test_tensor")
    assert t.status == "fail"
    assert "tests.py, line 31:" in t.message
    assert "assert torch.equal(got, want)" in t.message
    assert "got = tensor(shape=[4], dtype=torch.int64) = [3, 6, 0, 12]" in t.message
    assert "first difference at [2]: 0 vs 9 (1 of 4 elements differ)" in t.message
    t = next(t for t in v.tests if t.name == "test_example_scale")
    assert t.status == "pass"


def test_first_failure_stops_at_the_first_test_that_does_not_pass(toy):
    """check's extra seeds judge a mutant only until it is rejected: the tests after its first failure do not run."""
    wrong = (TOY_EX / "mutants" / "tensor_only.py").read_text()
    full = judge_source(toy, wrong)
    short = judge_source(toy, wrong, first_failure=True)
    assert [t.status for t in full.tests] == ["pass", "pass", "pass", "fail", "skip"]
    assert [t.name for t in short.tests] == ["test_example_scale", "test_from_import", "test_counter", "test_tensor"]
    assert short.status == full.status == "wrong_answer"
    good = judge_source(toy, GOOD, first_failure=True)  # a skipped test is not a failure: the rest still run
    assert good.accepted and [t.name for t in good.tests] == [t.name for t in full.tests]


PREPARED = """
import sys
from judge.checks import compile_tests
from judge.exercise import load_exercise
from judge.harness import prepare

e = load_exercise(sys.argv[1])
before = set(sys.modules)
prepare(e)
new = set(sys.modules) - before
print(sorted(m for m in new if m.startswith("minisgl")), "torch._dynamo" in sys.modules,
      compile_tests.cache_info().currsize)
"""


@pytest.mark.parametrize("slug,dynamo", [("graph-bs-list", False), ("prepare-inputs", True)])
def test_prepare_makes_what_every_judging_of_an_exercise_needs(slug, dynamo):
    """A warm child prepares an exercise before it forks the judgings (judge.child): the engine modules of its
    targets and of its tests' imports imported, its tests compiled (cached), and torch._dynamo imported only for
    tests that use the meta device (its first op imports it: a second per judging otherwise, none for the rest)."""
    out = subprocess.run([sys.executable, "-c", PREPARED, str(ROOT / "exercises" / slug)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    e = load_exercise(ROOT / "exercises" / slug)
    assert all(f"'{t.module}'" in " ".join(out) for t in e.targets), out
    assert out[-2:] == [str(dynamo), "1"], out


def test_assertion_on_a_call_shows_its_value(toy):
    v = judge_source(toy, (TOY_EX / "mutants" / "off_by_one.py").read_text())
    msg = v.tests[0].message
    assert "toyengine.scale([1, 2, 3], 2) = [3, 5, 7]" in msg
    assert "first difference at [0]: 3 vs 2" in msg


def test_output_is_captured_per_test_and_capped(toy):
    v = judge_source(toy, with_body("    print('x' * 10000)\n    return [v * k for v in values]\n"))
    assert v.status == "accepted"
    out = v.tests[0].output
    assert out.startswith("xxxx") and "more characters of output not shown" in out and len(out) < 4200


def test_load_output_and_load_errors(toy):
    v = judge_source(toy, "print('hello from the top')\n" + GOOD)
    assert v.status == "accepted" and v.output.strip() == "hello from the top"
    v = judge_source(toy, "raise ValueError('boom')\n" + GOOD, filename="mine.py")
    assert v.status == "runtime_error" and v.tests == []
    assert "loaded" in v.message and "mine.py" in v.message and "ValueError: boom" in v.message


@pytest.mark.parametrize(
    "body, status, text",
    [
        ("    raise SystemExit(3)\n", "runtime_error", "SystemExit(3)"),
        ("    return scale(values, k)\n", "runtime_error", "RecursionError"),
        ("    raise KeyboardInterrupt\n", "runtime_error", "KeyboardInterrupt"),
        ("    x = bytearray(1 << 62)\n    return [v * k for v in values]\n", "runtime_error", "Out of memory"),
        ("    return [v * k + 1 for v in values]\n", "wrong_answer", "first difference"),
    ],
)
def test_in_process_containment(toy, body, status, text):
    v = judge_source(toy, with_body(body))
    assert v.status == status
    assert text in v.tests[0].message
    assert v.tests[2].name == "test_counter" and v.tests[2].status == "pass", "the other tests still run"
    # and the judge keeps working, with the engine restored
    assert judge_source(toy, GOOD).status == "accepted"
    assert toyengine.scale([2], 3) == [6]


def test_recursion_traceback_is_collapsed(toy):
    v = judge_source(toy, with_body("    return scale(values, k)\n"))
    msg = v.tests[0].message
    assert "[the line above repeated" in msg and msg.count("return scale(values, k)") == 1


def test_deleting_engine_modules_is_healed(toy):
    body = ("    import sys\n    for m in [m for m in sys.modules if m.startswith(('toyengine', 'judge'))]:\n"
            "        del sys.modules[m]\n    return [v * k for v in values]\n")
    v = judge_source(toy, with_body(body))
    assert v.status == "accepted"
    assert "toyengine" in sys.modules and "judge.testing" in sys.modules
    assert sys.modules["toyengine"] is toyengine


def test_mode_rules(toy, tmp_path):
    import torch

    v = judge_source(toy, GOOD, mode="gpu")
    if not torch.cuda.is_available():
        assert v.status == "internal_error" and "CUDA" in v.message
    d = write_exercise(tmp_path, (TOY_EX / "exercise.toml").read_text().replace(
        'modes = ["browser", "local", "gpu"]', 'modes = ["browser"]'))
    v = judge_source(load_exercise(d), GOOD, mode="local")
    assert v.status == "internal_error" and "not judged in mode 'local'" in v.message


def test_broken_tests_file_is_our_fault(toy, tmp_path):
    d = write_exercise(tmp_path, (TOY_EX / "exercise.toml").read_text())
    (d / "tests.py").write_text("import nothing_here_at_all\n")
    v = judge_source(load_exercise(d), GOOD)
    assert v.status == "internal_error"
    assert "tests could not be loaded" in v.message


def test_nothing_passed_is_never_accepted():
    v = Verdict(status="accepted", tests=[TestResult("test_a", "skip"), TestResult("test_b", "skip")]).finalize()
    assert v.status == "internal_error" and v.passed == 0
    v = Verdict(status="accepted", tests=[]).finalize()
    assert v.status != "accepted"
    v = Verdict(status="accepted", tests=[TestResult("test_a", "pass"), TestResult("test_b", "fail"),
                                          TestResult("test_c", "error")]).finalize()
    assert (v.status, v.passed, v.failed) == ("runtime_error", 1, 2)
    v = Verdict(status="accepted", tests=[TestResult("test_a", "error"), TestResult("test_b", "timeout")]).finalize()
    assert v.status == "timeout"
    v = Verdict(status="compile_error").finalize()
    assert v.status == "compile_error"


def test_verdict_json_round_trip(toy):
    v = judge_source(toy, GOOD)
    again = Verdict.from_json(v.to_json())
    assert again.to_dict() == v.to_dict()


def test_interrupt_in_the_browser_is_a_timeout_of_that_test(toy):
    """In the browser an interrupt (pyodide.setInterruptBuffer) raises KeyboardInterrupt in the test."""
    v = judge_source(toy, with_body("    raise KeyboardInterrupt\n"), mode="browser")
    assert v.status == "timeout" and v.tests[0].status == "timeout" and "time limit" in v.tests[0].message
    assert v.tests[2].status == "pass"


def test_plain_values_are_exact_builtins_and_bounded():
    """plain() takes a list of exact builtin scalars as it is, and anything else element by element: a learner's
    int subclass inside a list or a tuple becomes a plain int (its __eq__ never runs); size limits still hold."""
    import torch

    from judge import checks

    class Sly(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    cases = (([1, Sly(2), 3], [1, 2, 3]), ((1, Sly(2)), (1, 2)), ([1.5, "a", True, Sly(7)], [1.5, "a", True, 7]))
    for v, want in cases:
        got = checks.plain(v)
        assert type(got) is type(v) and [type(x) for x in got] == [type(x) for x in want], got
        assert list(got) != [1, 9, 3] and list(got) == list(want)  # builtin comparisons: Sly's __eq__ is gone
    assert checks.plain([1, 2.5, "x", False]) == [1, 2.5, "x", False]
    t = checks.plain(torch.tensor([[1, 2], [3, 4]], dtype=torch.int32))
    assert (t.shape, t.values, {type(x) for x in t.values}) == ((2, 2), (1, 2, 3, 4), {int})
    with pytest.raises(checks.PlainError, match="more than"):
        checks.plain(list(range(checks.MAX_ELEMENTS + 1)))


def test_value_formatting():
    import torch

    assert fmt_value(plain(torch.zeros(2, 3, dtype=torch.int32))).startswith("tensor(shape=[2, 3], dtype=torch.int32)")
    assert "shapes differ: [3] vs [4]" == first_difference(plain(torch.zeros(3)), plain(torch.zeros(4)))
    assert first_difference([[1, 2], [3, 4]], [[1, 2], [3, 5]]) == "first difference at [1][1]: 4 vs 5"
    assert first_difference([1, 2], [1, 2, 3]) == "lengths differ: 2 vs 3"
    assert first_difference({"a": [1]}, {"a": [2]}) == "first difference at ['a'][0]: 1 vs 2"

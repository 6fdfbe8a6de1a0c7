"""The exercise bank, judged once locally for every promise made about it.

- Every exercise is valid as ``practice/judge.py check --trusted`` says (``judge.validate.check_exercise``): the
  reference accepted (Submit and Run), every alternative solution accepted, the starter and every mutant not (each
  mutant under SEEDS seeds), each file with the same verdict in trusted mode (a mutant: up to its first failing
  test), every verdict matching the JSON Schema, and every mutant caught by a test that says what is wrong (not
  only by the end-to-end token tests).

One file, so that one test process judges the bank locally once for all of it (tests/conftest.py schedules it
first: it is the longest). The browser's verdicts of the bank are compared with local ones in
tests/test_bank_browser.py, on the other worker. A helper thread judges the exercises from the other end of the
list at a lower priority (``nice`` +5, which the judges it starts inherit): it takes the CPU that the other worker
leaves idle (servers and browsers waiting), and gives it back when that worker needs it.
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import Future
from pathlib import Path

import pytest

from judge.exercise import list_exercises
from judge.isolation import end_kept_children
from judge.promises import END_TO_END
from judge.validate import MIN_MUTANTS, alternatives, check_exercise
from tests.browser import judge_browser

ROOT = Path(__file__).resolve().parent.parent

EXERCISES = {e.slug: e for e in list_exercises(ROOT / "exercises")}
SCHEMA = json.loads((ROOT / "judge" / "verdict.schema.json").read_text())
# the end-to-end tests (run the engine, compare its tokens): docs/judge.md, "For maintainers", names them so
CUDA_GRAPH = ["graph-bs-list", "graph-capture-buffer", "graph-pad-and-replay", "torch-backend-graph-hooks",
              "graph-capture-loop"]


# CI's share of check's seeds: every mutant rejected under the bank's seed (in trusted mode too) and 1 more;
# `make check` judges each under all of check's 10 (MUTANT_SEEDS) (with --trusted: about 15
# minutes on 2 cores). 3 seeds here took the CI past its 20 minutes on this machine.
SEEDS = 2


_CLAIMED: dict[str, Future] = {}  # slug -> its report, claimed by the thread that judges it
_LOCK = threading.Lock()
HELPER_NICE = 5  # a judge of the helper's gets at least a quarter of a core beside two busy ones (CFS weights)


def report(slug: str):
    with _LOCK:
        mine = slug not in _CLAIMED
        future = _CLAIMED.setdefault(slug, Future())
    if mine:
        try:
            future.set_result(check_exercise(EXERCISES[slug], trusted=True, seed=judge_browser.judge_seed(),
                                             seeds=SEEDS))
        except BaseException as e:  # noqa: BLE001 - the test that asks for it raises it
            future.set_exception(e)
    return future.result()


@pytest.fixture(scope="module", autouse=True)
def helper(request):
    """Judges the selected exercises from the end of the list until it meets the tests' thread (which goes
    from the start), or the module ends first (``pytest -x``): it stops after the exercise it is judging."""
    slugs = sorted({item.callspec.params["slug"] for item in request.session.items
                    if item.originalname == "test_exercise_is_valid" and hasattr(item, "callspec")})

    done = threading.Event()

    def run() -> None:
        os.setpriority(os.PRIO_PROCESS, 0, HELPER_NICE)  # this thread only (Linux) and what it starts
        for slug in reversed(slugs):
            with _LOCK:
                if slug in _CLAIMED or done.is_set():
                    return
            report(slug)

    thread = threading.Thread(target=run, name="bank-helper", daemon=True)
    if len(slugs) > 1:
        thread.start()
    yield
    done.set()
    if thread.is_alive():
        thread.join()
    end_kept_children()  # some were started at the helper's priority: the files after this one start their own


def test_the_bank():
    assert set(CUDA_GRAPH) <= set(EXERCISES)
    for e in EXERCISES.values():
        assert len(e.mutant_paths) >= MIN_MUTANTS, e.slug
        assert alternatives(e), f"{e.slug}: no alternative solution in exercises/<slug>/alternatives/"
        assert "local" in e.modes, f"{e.slug}: every exercise can be judged locally"


@pytest.mark.parametrize("slug", sorted(EXERCISES))
def test_exercise_is_valid(slug):
    r = report(slug)
    assert not r.problems, "\n".join(r.problems)
    ref, run = r.verdicts["local reference.py"], r.verdicts["local reference.py --run"]
    assert ref.passed >= 1 and run.total < ref.total, "Run runs only the visible examples"
    for name, v in r.verdicts.items():
        if "mutants/" in name or "starter" in name:
            assert v.failed >= 1, name
        if name.startswith("local mutants/"):  # caught by a test that says what is wrong, not only by the tokens
            said = [t.name for t in v.tests if t.status != "pass" and t.message and not END_TO_END.search(t.name)]
            assert said, f"{name} fails only end-to-end token tests: {[(t.name, t.status) for t in v.tests]}"
        data = json.loads(v.to_json())
        import jsonschema

        jsonschema.validate(data, SCHEMA)
        assert data["passed"] + data["failed"] + data["skipped"] == data["total"] == len(data["tests"]), name
        assert data["trust"]["level"] == ("trusted" if name.startswith("trusted") else "local"), name
        if "triton" in EXERCISES[slug].trusted_imports and "mutants/" not in name and "starter" not in name:
            assert data["env"]["triton"] == ("compiled" if data["env"]["device"] == "cuda" else "interpreter"), name
    if slug == "graph-bs-list":  # no Triton anywhere in it: the verdict says nothing of it
        assert "triton" not in json.loads(ref.to_json())["env"]


def test_schema_rejects_a_malformed_verdict():
    import jsonschema

    data = json.loads(report("graph-bs-list").verdicts["local reference.py"].to_json())
    for bad in ({**data, "status": "ok"}, {k: v for k, v in data.items() if k != "env"},
                {**data, "tests": [{**data["tests"][0], "status": "passed"}]}, {**data, "version": 1},
                {**data, "trust": {"level": "total", "measures": []}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def test_classic_mistakes_are_each_caught():
    """A copy left out, a rebound buffer, padding to the wrong size, returning padded logits."""
    cases = {
        ("graph-capture-buffer", "mutants/forgot_positions.py"): "test_engine_same_tokens_with_graphs",
        ("graph-capture-buffer", "mutants/rebinds_out_loc.py"): "test_copy_from_writes_in_place",
        ("graph-pad-and-replay", "mutants/pad_to_largest.py"): "test_pad_to_the_nearest_size",
        ("graph-pad-and-replay", "mutants/returns_padded_logits.py"): "test_replay_returns_only_the_real_rows",
        ("torch-backend-graph-hooks", "mutants/forgot_seq_lens.py"): "test_example_same_tokens_with_graphs",
        ("graph-capture-loop", "mutants/smallest_first.py"): "test_largest_first",
    }
    from judge.isolation import Judging
    from judge.trusted import judge_trusted

    for (slug, name), test in cases.items():
        e = EXERCISES[slug]
        # in trusted mode too, every test (check judges a mutant there only up to its first failure)
        seed = judge_browser.judge_seed()
        trusted = judge_trusted([Judging(e, (e.path / name).read_text(), name, "local", seed=seed)])
        for where, v in (("local", report(slug).verdicts[f"local {name}"]), ("trusted", trusted[0])):
            t = next(t for t in v.tests if t.name == test)
            assert t.status == "fail" and t.message, f"{where} {slug} {name}: {test} is {t.status}: {t.message}"


def test_gpu_tests_are_skipped_with_a_reason():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the @gpu tests run")
    for slug in CUDA_GRAPH:
        skipped = [t for t in report(slug).verdicts["local reference.py"].tests if t.status == "skip"]
        assert skipped and all("CUDA" in t.message for t in skipped), slug

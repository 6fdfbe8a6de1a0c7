"""Every exercise: the reference is accepted (Submit and Run), the starter and every mutant are not, a
correct solution written differently is accepted, every verdict matches the JSON Schema, and
`python practice/judge.py check` passes."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from judge.exercise import list_exercises  # noqa: E402
from judge.isolation import Job, judge_batch  # noqa: E402

EXERCISES = {e.slug: e for e in list_exercises(ROOT / "exercises")}
ALT = ROOT / "tests" / "fixtures" / "alt_solutions"
SCHEMA = json.loads((ROOT / "judge" / "verdict.schema.json").read_text())
GRAPH_CHAPTER = ["graph-bs-list", "graph-capture-buffer", "graph-pad-and-replay", "torch-backend-graph-hooks",
                 "graph-capture-loop"]
EXPECTED = sorted(EXERCISES)  # the whole bank; `pytest -k <slug>` judges one exercise


def _judge_all(slug: str) -> dict:
    e = EXERCISES[slug]
    names = ["reference", "reference --run", "starter", "alt"] + [f"mutants/{m.name}" for m in e.mutant_paths]
    jobs = [Job(e, None, "reference.py"), Job(e, None, "reference.py", run_only=True),
            Job(e, e.starter, "starter.py"), Job(e, (ALT / f"{slug}.py").read_text(), f"alt_{slug}.py")]
    jobs += [Job(e, m.read_text(), m.name) for m in e.mutant_paths]
    return dict(zip(names, judge_batch(jobs)))


class _Results(dict):
    """Verdicts per exercise, judged the first time a test asks (so `-k <slug>` judges only that one)."""

    def __missing__(self, slug: str) -> dict:
        self[slug] = _judge_all(slug)
        return self[slug]


@pytest.fixture(scope="module")
def results(request):
    # judge the exercises this session selected, two at a time, before the tests read them
    wanted = sorted({item.callspec.params["slug"] for item in request.session.items
                     if hasattr(item, "callspec") and "slug" in item.callspec.params})
    out = _Results()
    with ThreadPoolExecutor(max_workers=2) as pool:
        out.update(zip(wanted, pool.map(_judge_all, wanted)))
    return out


def test_the_chapter_exercises_exist():
    assert set(GRAPH_CHAPTER) <= set(EXERCISES)
    for e in EXERCISES.values():
        assert len(e.mutant_paths) >= 3, e.slug
        assert (ALT / f"{e.slug}.py").is_file(), e.slug
        assert e.statement.strip() and e.explanation.strip()
        assert "def test_example" in e.tests_path.read_text()


@pytest.mark.parametrize("slug", EXPECTED)
def test_reference_accepted(results, slug):
    for name in ("reference", "reference --run"):
        v = results[slug][name]
        assert v.status == "accepted", f"{slug} {name}: {v.to_json(indent=1)}"
        assert v.passed >= 1
    assert results[slug]["reference --run"].total < results[slug]["reference"].total


@pytest.mark.parametrize("slug", EXPECTED)
def test_alt_solution_accepted(results, slug):
    v = results[slug]["alt"]
    assert v.status == "accepted", v.to_json(indent=1)


@pytest.mark.parametrize("slug", EXPECTED)
def test_starter_and_mutants_rejected(results, slug):
    for name, v in results[slug].items():
        if name == "starter" or name.startswith("mutants/"):
            assert v.status not in ("accepted", "internal_error"), f"{slug} {name}: {v.status}"
            assert v.failed >= 1


@pytest.mark.parametrize("slug", EXPECTED)
def test_verdicts_match_the_schema(results, slug):
    import jsonschema

    for name, v in results[slug].items():
        data = json.loads(v.to_json())
        jsonschema.validate(data, SCHEMA)
        assert data["passed"] + data["failed"] + data["skipped"] == data["total"] == len(data["tests"]), name


def test_schema_rejects_a_malformed_verdict(results):
    import jsonschema

    data = json.loads(results["graph-bs-list"]["reference"].to_json())
    for bad in ({**data, "status": "ok"}, {k: v for k, v in data.items() if k != "env"},
                {**data, "tests": [{**data["tests"][0], "status": "passed"}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def test_classic_mistakes_are_each_caught(results):
    """A copy left out, a rebound buffer, padding to the wrong size, returning padded logits."""
    cases = {
        ("graph-capture-buffer", "mutants/forgot_positions.py"): "test_engine_same_tokens_with_graphs",
        ("graph-capture-buffer", "mutants/rebinds_out_loc.py"): "test_copy_from_writes_in_place",
        ("graph-pad-and-replay", "mutants/pad_to_largest.py"): "test_pad_to_the_nearest_size",
        ("graph-pad-and-replay", "mutants/returns_padded_logits.py"): "test_replay_returns_only_the_real_rows",
        ("torch-backend-graph-hooks", "mutants/forgot_seq_lens.py"): "test_example_same_tokens_with_graphs",
        ("graph-capture-loop", "mutants/smallest_first.py"): "test_largest_first",
    }
    for (slug, name), test in cases.items():
        v = results[slug][name]
        t = next(t for t in v.tests if t.name == test)
        assert t.status == "fail", f"{slug} {name}: {test} is {t.status}: {t.message}"
        assert t.message


def test_gpu_tests_are_skipped_with_a_reason(results):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the @gpu tests run")
    for slug in GRAPH_CHAPTER:
        skipped = [t for t in results[slug]["reference"].tests if t.status == "skip"]
        assert skipped and all("CUDA" in t.message for t in skipped), slug


def test_check_command_passes_for_every_exercise():
    r = subprocess.run([sys.executable, "practice/judge.py", "check"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(EXPECTED)}/{len(EXPECTED)} exercises valid" in r.stdout

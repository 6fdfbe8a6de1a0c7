"""The learner's command line: python practice/judge.py (and python -m judge)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUTANT = ROOT / "exercises" / "graph-bs-list" / "mutants" / "ceiling_excluded.py"
ALT = ROOT / "exercises" / "graph-bs-list" / "alternatives" / "alt1.py"


def judge(*args: str, env: dict | None = None, entry: tuple = ("practice/judge.py",)) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *entry, *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.fixture()
def workspace(tmp_path):
    return {"MINISGL_WORKSPACE": str(tmp_path / "ws")}


def test_list_and_module_entry():
    r = judge("list")
    assert r.returncode == 0
    for slug in ("graph-bs-list", "graph-capture-buffer", "graph-pad-and-replay", "torch-backend-graph-hooks",
                 "graph-capture-loop"):
        assert slug in r.stdout
    assert judge("list", entry=("-m", "judge")).stdout == r.stdout


def test_show():
    r = judge("show", "graph-capture-buffer")
    assert r.returncode == 0
    assert "GraphCaptureBuffer.copy_from" in r.stdout and "set_batch" in r.stdout


def test_hints_one_at_a_time(workspace):
    from judge.exercise import find_exercise

    hints = find_exercise("graph-bs-list").hints
    first, second = judge("hint", "graph-bs-list", env=workspace), judge("hint", "graph-bs-list", env=workspace)
    assert first.returncode == second.returncode == 0
    assert f"Hint 1 of {len(hints)}" in first.stdout and hints[0] in first.stdout
    assert f"Hint 2 of {len(hints)}" in second.stdout and hints[1] in second.stdout  # the next one
    again = judge("hint", "graph-bs-list", "1", env=workspace)
    assert again.returncode == 0 and hints[0] in again.stdout
    r = judge("hint", "graph-bs-list", str(len(hints) + 1), env=workspace)
    assert r.returncode == 2 and f"hints 1 to {len(hints)}" in r.stderr


def test_unknown_exercise_is_a_usage_error():
    r = judge("show", "no-such-exercise")
    assert r.returncode == 2 and "no exercise 'no-such-exercise'" in r.stderr
    r = judge("test", "no-such-exercise")
    assert r.returncode == 2


def test_start_then_test_the_starter(workspace):
    r = judge("test", "graph-bs-list", env=workspace)
    assert r.returncode == 2 and "start graph-bs-list" in r.stderr, "nothing started yet: say how to start"
    r = judge("start", "graph-bs-list", env=workspace)
    assert r.returncode == 0
    copy = Path(workspace["MINISGL_WORKSPACE"]) / "graph-bs-list.py"
    starter = (ROOT / "exercises" / "graph-bs-list" / "starter.py").read_text()
    assert copy.read_text() == starter
    copy.write_text(starter + "\n# my work\n")
    r = judge("start", "graph-bs-list", env=workspace)
    assert "already exists" in r.stdout and copy.read_text().endswith("# my work\n"), "never overwrite work"
    r = judge("test", "graph-bs-list", "--run", env=workspace)
    assert r.returncode == 1
    assert "RUNTIME ERROR" in r.stdout and "NotImplementedError" in r.stdout


def test_exit_codes_and_json(tmp_path):
    r = judge("test", "graph-bs-list", str(ALT), "--json")
    assert r.returncode == 0
    v = json.loads(r.stdout)  # --json prints the verdict JSON and nothing else
    assert v["status"] == "accepted" and v["version"] == 2 and v["exercise"] == "graph-bs-list"
    r = judge("test", "graph-bs-list", str(MUTANT), "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["status"] == "wrong_answer"
    r = judge("test", "graph-bs-list", str(tmp_path / "missing.py"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_readable_report():
    r = judge("test", "graph-bs-list", str(MUTANT))
    assert r.returncode == 1
    out = r.stdout
    assert "Verdict: WRONG ANSWER" in out
    assert "FAIL" in out and "tests.py, line" in out and "lengths differ: 22 vs 23" in out
    assert "\033[" not in out, "no colors when stdout is not a terminal"


def test_solution_is_the_engine_code():
    r = judge("solution", "graph-capture-buffer")
    assert r.returncode == 0
    assert "class GraphCaptureBuffer:" in r.stdout and "def copy_from(self, batch: Batch) -> None:" in r.stdout
    assert "self.positions[s] = batch.positions" in r.stdout


def test_doctor():
    r = judge("doctor")
    assert r.returncode == 0
    assert "torch       2.13.0" in r.stdout and "CUDA" in r.stdout and "can judge" in r.stdout


# the command line's plumbing: 2 seeds per mutant (tests/test_bank.py holds the bank to 3, `make check` to 10)
def test_check_one_exercise():
    r = judge("check", "graph-bs-list", "--seeds", "2")
    assert r.returncode == 0 and "ok   graph-bs-list" in r.stdout


def test_check_one_chapter():
    """A chapter id checks that chapter's exercises, and only them."""
    r = judge("check", "request-lifecycle", "--seeds", "2")
    checked = sorted(line.split()[1] for line in r.stdout.splitlines() if line.startswith("ok"))
    assert r.returncode == 0 and checked == ["req-lengths", "sampling-params-validate"], r.stdout
    r = judge("check", "no-such-chapter")
    assert r.returncode != 0 and "no-such-chapter" in r.stdout + r.stderr


def test_gpu_mode_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    r = judge("test", "graph-bs-list", str(ALT), "--mode", "gpu", "--json")
    assert r.returncode == 1
    v = json.loads(r.stdout)
    assert v["status"] == "internal_error" and "CUDA" in v["message"]

"""The judge's map holds (docs/judge.md, "The map of the judge"; issue 15): one public judging function per
layer, named in the map; no private name used across packages; every failure verdict built by one
constructor; one mapping between the judge's modes and the grading server's.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from judge.modes import MODES, SUBMISSION_MODES, judge_mode, submission_mode
from judge.verdict import FAILURES, Verdict

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("judge/harness.py", "judge/isolation.py", "judge/trusted.py")
PACKAGES = ("judge", "runner", "browser", "web")


def _map_rows() -> dict[str, str]:
    """file -> its "what it holds" cell, from the map's table."""
    text = (ROOT / "docs" / "judge.md").read_text(encoding="utf-8")
    section = text.split("## The map of the judge", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`judge/"):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def _judging_functions(path: Path) -> set[str]:
    """The public module-level functions of ``path`` that give verdicts or outcomes (by their annotation)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and node.returns is not None
            and re.search(r"\b(Verdict|Outcome)\b", ast.unparse(node.returns))}


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_judges_through_the_one_function_its_map_row_names(layer):
    row = _map_rows()[layer]
    named = set(re.findall(r"`(judge_\w+)`", row))
    assert len(named) == 1, f"docs/judge.md's row for {layer} names {named}: one judging function per layer"
    assert _judging_functions(ROOT / layer) == named


def _python_files():
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            rel = p.relative_to(ROOT).parts
            if "node_modules" in rel or (rel[0] == "browser" and ("torch" in rel or "safetensors" in rel)):
                continue  # the browser's numpy torch is a wheel of its own
            yield p


def test_no_private_name_is_imported_from_another_package():
    wrong = []
    for p in _python_files():
        me = p.relative_to(ROOT).parts[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                if node.module.split(".")[0] in PACKAGES and node.module.split(".")[0] != me:
                    wrong += [f"{p.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert not wrong, f"private names used from another package (make them public or move them): {wrong}"


def test_failure_verdicts_are_built_by_verdict_failure_only():
    by_hand = []
    for p in _python_files():
        if p == ROOT / "judge" / "verdict.py":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Verdict":
                status = next((k.value for k in node.keywords if k.arg == "status"), None)
                if isinstance(status, ast.Constant) and status.value in FAILURES:
                    by_hand.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not by_hand, f"failure verdicts built by hand (use Verdict.failure): {by_hand}"


def test_verdict_failure_keeps_its_status_and_refuses_a_passing_one():
    for status in FAILURES:
        v = Verdict.failure(status, "x" * 10_000, exercise="ex", mode="gpu", run=True, seed=7)
        assert (v.status, v.exercise, v.mode, v.run, v.seed, v.total) == (status, "ex", "gpu", True, 7, 0)
        assert len(v.message) < 5000 and "more characters not shown" in v.message
    with pytest.raises(ValueError):
        Verdict.failure("accepted", "", exercise="ex")


def test_one_mapping_between_the_modes_of_a_submission_and_of_a_judging():
    assert {judge_mode(m) for m in SUBMISSION_MODES} == {"gpu", "local"} <= set(MODES)
    assert judge_mode("gpu", gpu=False) == "local" and judge_mode("cpu", gpu=True) == "local"
    assert [submission_mode(judge_mode(m)) for m in SUBMISSION_MODES] == list(SUBMISSION_MODES)
    with pytest.raises(ValueError):
        submission_mode("browser")


def _submit(*args: str) -> subprocess.CompletedProcess:
    """``python -m judge submit`` to a port where nothing listens: it gets as far as posting."""
    return subprocess.run([sys.executable, "-m", "judge", "submit", "graph-bs-list", str(ROOT / "README.md"),
                           "--server", "http://127.0.0.1:9", "--token", "t", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_submit_speaks_the_judges_modes_and_still_takes_cpu():
    local = _submit("--mode", "local")
    assert local.returncode == 2 and "cannot reach" in local.stderr, local.stderr
    old = _submit("--mode", "cpu")
    assert old.returncode == 2 and "--mode cpu is now --mode local" in old.stderr and "cannot reach" in old.stderr
    bad = _submit("--mode", "browser")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_process_control_is_written_once_in_judge_sandbox():
    """Killing and reaping by pid, prctl and resource limits live in judge/sandbox.py; the child, the isolated
    layer, the trusted mode and the runner's job and executors call it instead of writing their own (a
    ``Popen``'s or a Docker container's own ``kill`` is not this)."""
    calls = {"kill", "killpg", "waitpid", "prctl", "setrlimit"}
    elsewhere = []
    for p in _python_files():
        if p == ROOT / "judge" / "sandbox.py":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in calls
                    and (node.func.attr == "prctl" or ast.unparse(node.func.value) in ("os", "resource"))):
                elsewhere.append(f"{p.relative_to(ROOT)}:{node.lineno} {ast.unparse(node.func)}")
    assert not elsewhere, f"process control outside judge/sandbox.py: {elsewhere}"

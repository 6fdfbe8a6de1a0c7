"""`practice/judge.py check --browser`: it judges every file of an exercise in Pyodide and reports what fails."""

from __future__ import annotations

import shutil
import subprocess
import sys

from judge.exercise import find_exercise
from judge.solution import reference_source
from tests.browser import judge_browser


def test_check_browser_flags_a_mutant_that_passes(tmp_path):
    """`check --browser` on a copy of an exercise with one planted "mutant" that is in fact the reference: that
    mutant, and only it, is reported."""
    judge_browser.need_layer()
    judge_browser.site()
    root = tmp_path / "exercises"
    root.mkdir()
    shutil.copyfile(judge_browser.REPO / "exercises" / "chapters.toml", root / "chapters.toml")
    shutil.copytree(judge_browser.REPO / "exercises" / "graph-bs-list", root / "graph-bs-list")
    (root / "graph-bs-list" / "mutants" / "zz_planted.py").write_text(reference_source(find_exercise("graph-bs-list")))
    table = root / "graph-bs-list" / "promises.toml"  # the planted one under a promise, as a real mutant would be
    table.write_text(table.read_text().replace('mutants = ["descending"]', 'mutants = ["descending", "zz_planted"]'))
    proc = subprocess.run([sys.executable, "practice/judge.py", "--exercises", str(root), "check", "--browser"],
                          cwd=judge_browser.REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    problems = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("- ")]
    assert problems == ["     - [browser] mutants/zz_planted.py is accepted (it must fail, and not with an internal "
                        "error)"], proc.stdout

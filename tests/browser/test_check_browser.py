"""`practice/judge.py check --browser`: it judges every file of an exercise in Pyodide and reports what fails."""

from __future__ import annotations

import shutil
import subprocess
import sys

from judge.exercise import find_exercise
from judge.solution import reference_source
from tests.browser import judge_browser

BROWSER_ONLY = """

import sys

if sys.platform == "emscripten":  # in the browser only: the sizes in descending order
    _ascending = make_graph_bs_list

    def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
        return sorted(_ascending(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory), reverse=True)
"""


def test_check_browser_flags_a_mutant_that_passes_and_one_judged_otherwise_than_locally(tmp_path):
    """`check --browser` on a copy of an exercise with two planted "mutants": one that is in fact the reference
    (accepted), one that is the reference locally and descending in the browser (its per-test statuses differ
    from local mode's): those two, and only they, are reported."""
    judge_browser.need_layer()
    judge_browser.site()
    root = tmp_path / "exercises"
    root.mkdir()
    shutil.copyfile(judge_browser.REPO / "exercises" / "chapters.toml", root / "chapters.toml")
    shutil.copytree(judge_browser.REPO / "exercises" / "graph-bs-list", root / "graph-bs-list")
    (root / "graph-bs-list" / "mutants" / "zz_planted.py").write_text(reference_source(find_exercise("graph-bs-list")))
    (root / "graph-bs-list" / "mutants" / "zz_browser_only.py").write_text(
        reference_source(find_exercise("graph-bs-list")) + BROWSER_ONLY)
    table = root / "graph-bs-list" / "promises.toml"  # the planted ones under a promise, as real mutants would be
    table.write_text(table.read_text().replace('mutants = ["descending"]',
                                               'mutants = ["descending", "zz_browser_only", "zz_planted"]'))
    proc = subprocess.run([sys.executable, "practice/judge.py", "--exercises", str(root), "check", "--browser"],
                          cwd=judge_browser.REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    problems = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("- ")]
    assert len(problems) == 2, proc.stdout
    assert problems[0].startswith("     - [browser] mutants/zz_browser_only.py: per-test statuses differ from local "
                                  "mode under seed "), proc.stdout
    assert ": pass locally, fail in the browser" in problems[0], proc.stdout
    assert problems[1] == ("     - [browser] mutants/zz_planted.py is accepted (it must fail, and not with an "
                           "internal error)"), proc.stdout

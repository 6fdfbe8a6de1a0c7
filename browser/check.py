"""``practice/judge.py check --browser``: validate the exercises that list ``browser`` in Pyodide.

The same files as ``check`` (the reference by Submit and by Run, every alternative solution, the starter, every
mutant), with one seed for all, judged through the Node runner (``browser.node``) on the browser's assets:
the reference and the alternatives must be accepted, the starter and the mutants rejected, never with
``internal_error``, and each file's per-test statuses must be those of the same file judged locally under the same
seed (one verdict in every place). The checkout's exercises folder is mounted over the build's, so an author's edits
count.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from judge.exercise import Exercise
from judge.isolation import Judging, judge_isolated
from judge.validate import REFERENCE_RUN, Report, check_exercise, judged_files, judged_problems
from judge.verdict import Verdict

from .node import NodeJob, judge_in_node


def build_assets() -> str | None:
    """Bring the browser assets up to date (browser/build.py is incremental); an error message or None."""
    tool = Path(__file__).resolve().parent / "build.py"
    if not (tool.parent / "pins").is_dir():
        return None  # an installed package (the pins are not installed): use the assets as they are
    proc = subprocess.run([sys.executable, str(tool), "--quiet"], capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"{tool} failed")


def check_browser(exercises: list[Exercise], root: Path | None = None) -> list[Report]:
    """One report per exercise (static checks for all; judgings for those that list ``browser``)."""
    reports = [check_exercise(e, modes=[]) for e in exercises]  # modes=[]: only the static checks
    seed = random.SystemRandom().randrange(2**31)
    plan: list[tuple[Report, str, str]] = []  # (report, kind, name) per job
    jobs: list[NodeJob] = []
    for e, report in zip(exercises, reports):
        if "browser" not in e.modes:
            continue
        files = judged_files(e)
        reference = files[0][2]
        for kind, name, src in files:
            plan.append((report, kind, name))
            jobs.append(NodeJob(e.slug, src, name, False, seed))
        plan.append((report, REFERENCE_RUN, "reference.py"))
        jobs.append(NodeJob(e.slug, reference, "reference.py", True, seed))
    if not jobs:
        return reports
    verdicts = judge_in_node(jobs, exercises=root or exercises[0].path.parent)
    local = [o.verdict for o in judge_isolated([Judging(r.exercise, j.source, j.filename, "local", j.run_only,
                                                        seed=seed) for (r, _, _), j in zip(plan, jobs)])]
    for (report, kind, name), v, lv in zip(plan, verdicts, local):
        report.judged += 2
        report.verdicts[f"browser {name}" + (" --run" if kind == REFERENCE_RUN else "")] = v
        report.problems.extend(judged_problems(kind, name, v, "browser", catches=name in report.exercise.run_catches))
        differ = status_differences(lv, v)
        if differ:
            report.problems.append(f"[browser] {name}" + (" --run" if kind == REFERENCE_RUN else "") +
                                   f": per-test statuses differ from local mode under seed {seed}: {differ}")
    return reports


def status_differences(local: Verdict, browser: Verdict) -> str | None:
    """How the per-test statuses of one file judged in the browser differ from the same file judged locally (the
    same seed): None when they are equal, test by test."""
    ls, bs = [(t.name, t.status) for t in local.tests], [(t.name, t.status) for t in browser.tests]
    if ls == bs:
        return None
    if len(ls) == len(bs):
        return "; ".join(f"{a[0]}: {a[1]} locally, {b[1]} in the browser" for a, b in zip(ls, bs) if a != b)
    return (f"local {local.status} ({len(ls)} tests), browser {browser.status} ({len(bs)} tests): "
            f"{(browser.message or local.message).strip()[:300]}")

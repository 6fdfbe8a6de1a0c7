"""The learner's command line: ``python practice/judge.py`` (or ``python -m judge``).

    list                      the exercises
    show ID                   an exercise's statement and targets
    start ID                  copy the starter to practice/workspace/ID.py (git-ignored)
    test ID [FILE]            judge FILE (default: the workspace copy); exit 0 only when accepted
         [--run]              only the visible test_example* tests ("Run"); default: all ("Submit")
         [--json]             print only the verdict JSON
         [--mode local|gpu]
    solution ID               the reference solution (the engine's own code)
    check [ID...]             maintainers: reference passes, starter and every mutant fail, ...
    doctor                    what this machine can judge

Exit codes: 0 success (``test``: accepted), 1 not accepted / check failed, 2 usage error.
The parent never imports torch except for ``solution`` and ``doctor``; judging runs in a child.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .exercise import REPO_ROOT, Exercise, ExerciseError, find_exercise, list_exercises, load_chapters
from .verdict import Verdict

STATUS_TEXT = {
    "accepted": "ACCEPTED",
    "wrong_answer": "WRONG ANSWER",
    "runtime_error": "RUNTIME ERROR",
    "compile_error": "COMPILE ERROR",
    "timeout": "TIME LIMIT EXCEEDED",
    "internal_error": "INTERNAL ERROR (not your fault)",
}


def workspace_dir() -> Path:
    env = os.environ.get("MINISGL_WORKSPACE")
    return Path(env) if env else REPO_ROOT / "practice" / "workspace"


class _Style:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text


def _style_for(stream) -> _Style:
    return _Style(hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR")
                  and os.environ.get("TERM") != "dumb")


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _entry() -> str:
    return "python practice/judge.py"


# ----------------------------------------------------------------------------------------------
# the readable report


def format_verdict(v: Verdict, style: _Style | None = None) -> str:
    c = style or _Style(False)
    lines = []
    what = "Run (visible examples only)" if v.run else "Submit (all tests)"
    dev = v.env.gpu or v.env.device
    lines.append(c(f"{v.exercise}", "1") + f"  ·  {what}  ·  mode {v.mode}  ·  {dev}")
    if v.output:
        lines.append(c("  output while loading your file:", "2"))
        lines.extend("    " + ln for ln in v.output.rstrip().splitlines())
    for t in v.tests:
        mark = {"pass": c("PASS", "32"), "fail": c("FAIL", "31"), "error": c("ERROR", "31"),
                "timeout": c("TIMEOUT", "33"), "skip": c("SKIP", "2")}[t.status]
        hidden = "" if t.visible else c(" (hidden)", "2")
        ms = f"{t.ms:.0f} ms" if t.status != "skip" else ""
        lines.append(f"  {mark:<6} {t.name}{hidden}  {c(ms, '2')}".rstrip())
        if t.doc and t.status in ("fail", "error", "timeout"):
            lines.extend(c(f"         {ln}", "2") for ln in textwrap.wrap(" ".join(t.doc.split()), 90))
        if t.message and t.status != "pass":
            lines.extend("         " + ln for ln in t.message.rstrip().splitlines())
        if t.output and t.status != "pass":
            lines.append(c("         output:", "2"))
            lines.extend("           " + ln for ln in t.output.rstrip().splitlines()[:40])
    if v.message and not any(t.message == v.message for t in v.tests):
        lines.append("")
        lines.extend("  " + ln for ln in v.message.rstrip().splitlines())
    color = "32" if v.accepted else ("33" if v.status in ("timeout", "internal_error") else "31")
    counts = f"{v.passed}/{v.total} passed"
    if v.failed:
        counts += f", {v.failed} failed"
    if v.skipped:
        counts += f", {v.skipped} skipped"
    lines.append("")
    verdict = c(f"Verdict: {STATUS_TEXT.get(v.status, v.status)}", "1;" + color)
    lines.append(verdict + f"  ({counts}, {v.ms / 1000:.1f} s)")
    if v.metrics:
        lines.append("  metrics: " + ", ".join(f"{k}={val:g}" for k, val in v.metrics.items()))
    if v.accepted and v.run:
        lines.append(c("  The visible examples pass. Now submit: drop --run to run all the tests.", "2"))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# commands


def cmd_list(args) -> int:
    exercises = list_exercises(args.exercises)
    if not exercises:
        print("no exercises found", file=sys.stderr)
        return 1
    w = max(len(e.slug) for e in exercises)
    for ch in load_chapters(args.exercises):
        mine = [e for e in exercises if e.chapter == ch.id]
        if not mine:
            continue
        print(f"\n{ch.number}. {ch.title}")
        for e in mine:
            print(f"  {e.slug:<{w}}  {e.difficulty:<6}  {e.title}")
    print(f"\nStart one: {_entry()} start <id>")
    return 0


def cmd_show(args) -> int:
    e = find_exercise(args.id, args.exercises)
    print(f"# {e.title}  ({e.slug})")
    print(f"chapter: {e.chapter} · difficulty: {e.difficulty} · modes: {', '.join(e.modes)}"
          f" · tags: {', '.join(e.tags) or '-'}")
    print("you write: " + ", ".join(t.spec for t in e.targets))
    print()
    print(e.statement.rstrip())
    print()
    print(f"Start: {_entry()} start {e.slug}    Test: {_entry()} test {e.slug}")
    return 0


def cmd_start(args) -> int:
    e = find_exercise(args.id, args.exercises)
    ws = workspace_dir()
    ws.mkdir(parents=True, exist_ok=True)
    dest = ws / f"{e.slug}.py"
    if dest.exists() and not args.force:
        print(f"{_rel(dest)} already exists (keeping your work; --force overwrites it)")
    else:
        shutil.copyfile(e.starter_path, dest)
        print(f"wrote {_rel(dest)}")
    print(f"Edit it, then: {_entry()} test {e.slug} --run   (visible examples)")
    print(f"          or: {_entry()} test {e.slug}         (all tests)")
    return 0


def cmd_test(args) -> int:
    e = find_exercise(args.id, args.exercises)
    path = Path(args.file) if args.file else workspace_dir() / f"{e.slug}.py"
    if not path.is_file():
        hint = f" (run `{_entry()} start {e.slug}` first)" if not args.file else ""
        print(f"no such file: {_rel(path)}{hint}", file=sys.stderr)
        return 2
    source = path.read_text(encoding="utf-8")
    if args.in_process:
        from .harness import judge_source

        v = judge_source(e, source, filename=str(path.resolve()), mode=args.mode, run_only=args.run)
    else:
        from .isolation import judge_isolated

        v = judge_isolated(e, source, filename=str(path.resolve()), mode=args.mode, run_only=args.run)
    if args.json:
        print(v.to_json())
    else:
        print(format_verdict(v, _style_for(sys.stdout)))
    return 0 if v.accepted else 1


def cmd_solution(args) -> int:
    e = find_exercise(args.id, args.exercises)
    from .binding import reference_source

    print(reference_source(e), end="")
    return 0


def cmd_doctor(args) -> int:
    import platform

    print(f"python      {platform.python_version()} ({sys.executable})")
    try:
        import torch
    except Exception as ex:  # noqa: BLE001
        print(f"torch       not importable: {ex}")
        print("can judge   nothing (install torch==2.13.0)")
        return 1
    print(f"torch       {torch.__version__}")
    cuda = torch.cuda.is_available()
    print(f"CUDA        {'available' if cuda else 'not available'}")
    if cuda:
        print(f"GPU         {torch.cuda.get_device_name(0)}")
    try:
        import minisgl  # noqa: F401

        engine = "importable"
    except Exception as ex:  # noqa: BLE001
        engine = f"not importable: {ex}"
    print(f"minisgl     {engine}")
    folder = Path(args.exercises or REPO_ROOT / "exercises")
    print(f"exercises   {len(list_exercises(args.exercises))} in {_rel(folder)}")
    modes = ["local"] + (["gpu"] if cuda else [])
    print(f"can judge   modes {', '.join(modes)}" + ("" if cuda else " (tests marked @gpu are skipped)"))
    return 0


# ----------------------------------------------------------------------------------------------
# check: the maintainers' validation


def _has_example(e: Exercise) -> bool:
    try:
        tree = ast.parse(e.tests_path.read_text(encoding="utf-8"))
    except SyntaxError:
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name.startswith("test_example") for n in tree.body)


def check_exercise(e: Exercise, modes: list[str] | None = None) -> list[str]:
    """Problems found with one exercise (empty: it is valid)."""
    from .isolation import Job, judge_batch

    problems: list[str] = []
    if not e.statement.strip():
        problems.append("statement.md is empty")
    if not e.explanation.strip():
        problems.append("explanation.md is empty")
    if not _has_example(e):
        problems.append("tests.py has no visible test_example* test")
    mutants = e.mutant_paths
    if len(mutants) < 3:
        problems.append(f"only {len(mutants)} mutant(s) in mutants/ (at least 3 expected)")
    if modes is None:
        modes = ["local"]
        if "gpu" in e.modes and _cuda_here():
            modes.append("gpu")
    for mode in modes:
        if mode not in e.modes:
            continue
        jobs = [Job(e, None, "reference.py", mode), Job(e, None, "reference.py", mode, run_only=True),
                Job(e, e.starter, "starter.py", mode)]
        jobs += [Job(e, m.read_text(encoding="utf-8"), f"mutants/{m.name}", mode) for m in mutants]
        verdicts = judge_batch(jobs)
        ref, ref_run, starter, muts = verdicts[0], verdicts[1], verdicts[2], verdicts[3:]
        if not ref.accepted:
            problems.append(f"[{mode}] the reference is not accepted: {ref.status}: {_why(ref)}")
        if not ref_run.accepted:
            problems.append(f"[{mode}] the reference is not accepted by Run (--run): {ref_run.status}: {_why(ref_run)}")
        if starter.accepted or starter.status == "internal_error":
            problems.append(f"[{mode}] the starter is {starter.status} (it must fail, and not with an internal error)"
                            + (f": {_why(starter)}" if starter.status == "internal_error" else ""))
        for m, v in zip(mutants, muts):
            if v.accepted or v.status == "internal_error":
                problems.append(f"[{mode}] mutant {m.name} is {v.status} (it must fail, and not with an internal error)"
                                + (f": {_why(v)}" if v.status == "internal_error" else ""))
    return problems


def _why(v: Verdict) -> str:
    if v.message:
        return v.message.strip().splitlines()[0][:300]
    bad = [t for t in v.tests if t.status not in ("pass", "skip")]
    if bad:
        return f"{bad[0].name}: " + (bad[0].message.strip().splitlines() or [""])[0][:300]
    return ""


def _cuda_here() -> bool:
    if shutil.which("nvidia-smi") is None and not os.path.exists("/dev/nvidia0"):
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def cmd_check(args) -> int:
    if args.ids:
        exercises = [find_exercise(i, args.exercises) for i in args.ids]
    else:
        exercises = list_exercises(args.exercises)
    if not exercises:
        print("no exercises found", file=sys.stderr)
        return 1
    style = _style_for(sys.stdout)
    workers = max(1, min(len(exercises), args.jobs or os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(check_exercise, exercises))
    bad = 0
    for e, problems in zip(exercises, results):
        if problems:
            bad += 1
            print(style("FAIL", "31") + f" {e.slug}")
            for p in problems:
                print("     - " + p.replace("\n", "\n       "))
        else:
            n = len(e.mutant_paths)
            print(style("ok  ", "32") + f" {e.slug}  (reference accepted; starter and {n} mutants fail)")
    print(f"\n{len(exercises) - bad}/{len(exercises)} exercises valid")
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=_entry(),
                                 description="Practice mini-sglang: write the engine's code, get a verdict.")
    ap.add_argument("--exercises", default=None, help="the exercises folder (default: exercises/ of this checkout)")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="list the exercises").set_defaults(fn=cmd_list)
    p = sub.add_parser("show", help="show an exercise's statement")
    p.add_argument("id")
    p.set_defaults(fn=cmd_show)
    p = sub.add_parser("start", help="copy the starter into practice/workspace/ID.py")
    p.add_argument("id")
    p.add_argument("--force", action="store_true", help="overwrite an existing workspace file")
    p.set_defaults(fn=cmd_start)
    p = sub.add_parser("test", help="judge a submission (exit 0 only when accepted)")
    p.add_argument("id")
    p.add_argument("file", nargs="?", help="the submission (default: practice/workspace/ID.py)")
    p.add_argument("--run", action="store_true", help="only the visible test_example* tests")
    p.add_argument("--json", action="store_true", help="print only the verdict JSON")
    p.add_argument("--mode", choices=["local", "gpu"], default="local")
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # debugging: no child process
    p.set_defaults(fn=cmd_test)
    p = sub.add_parser("solution", help="print the reference solution")
    p.add_argument("id")
    p.set_defaults(fn=cmd_solution)
    p = sub.add_parser("check", help="validate exercises (maintainers)")
    p.add_argument("ids", nargs="*")
    p.add_argument("--jobs", type=int, default=0, help="exercises checked in parallel (default: CPU count)")
    p.set_defaults(fn=cmd_check)
    sub.add_parser("doctor", help="what this machine can judge").set_defaults(fn=cmd_doctor)
    from .remote import add_parser as add_submit

    add_submit(sub)  # submit: judge on a grading server
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except ExerciseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""The learner's command line: ``python practice/judge.py`` (or ``python -m judge``).

    list                      the exercises
    show ID                   an exercise's statement and targets
    start ID                  copy the starter to practice/workspace/ID.py (git-ignored)
    test ID [FILE]            judge FILE (default: the workspace copy); exit 0 only when accepted
         [--run]              only the visible test_example* tests ("Run"); default: all ("Submit")
         [--json]             print only the verdict JSON
         [--mode local|gpu]
         [--trusted]          judged as the grading server does (a referee process decides)
         [--seed N]           the hidden inputs of an earlier judging again
    hint ID [N]               hint N of the exercise (default: the next one not yet shown here)
    solution ID               the reference solution (the engine's own code)
    check [ID...] [--trusted] maintainers: reference and alternatives pass, starter and mutants fail
          [--browser]         ... in Pyodide, through the Node runner (builds the browser assets first)
    doctor                    what this machine can judge

Exit codes: 0 success (``test``: accepted), 1 not accepted / check failed, 2 usage error.
The parent never imports torch except for ``solution`` and ``doctor``; judging runs in a child.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .exercise import REPO_ROOT, ExerciseError, find_exercise, list_exercises, load_chapters
from .report import format_verdict, style_for
from .validate import MUTANT_SEEDS
from .workspace import shown, workspace_dir


def _entry() -> str:
    return "python practice/judge.py"


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
        print(f"{shown(dest)} already exists (keeping your work; --force overwrites it)")
    else:
        shutil.copyfile(e.starter_path, dest)
        print(f"wrote {shown(dest)}")
    print(f"Edit it, then: {_entry()} test {e.slug} --run   (visible examples)")
    print(f"          or: {_entry()} test {e.slug}         (all tests)")
    return 0


def cmd_test(args) -> int:
    e = find_exercise(args.id, args.exercises)
    path = Path(args.file) if args.file else workspace_dir() / f"{e.slug}.py"
    if not path.is_file():
        hint = f" (run `{_entry()} start {e.slug}` first)" if not args.file else ""
        print(f"no such file: {shown(path)}{hint}", file=sys.stderr)
        return 2
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as ex:
        print(f"cannot read {shown(path)}: {ex}", file=sys.stderr)
        return 2
    from .isolation import Judging

    judging = Judging(e, source, filename=str(path.resolve()), mode=args.mode, run_only=args.run, seed=args.seed)
    if args.trusted:
        from .trusted import judge_trusted

        v = judge_trusted([judging])[0]
    else:
        from .isolation import judge_isolated

        v = judge_isolated([judging])[0].verdict
    if args.json:
        print(v.to_json())
    else:
        print(format_verdict(v, style_for(sys.stdout)))
    return 0 if v.accepted else 1


def cmd_hint(args) -> int:
    e = find_exercise(args.id, args.exercises)
    hints = e.hints
    if not hints:
        print(f"{e.slug} has no hints", file=sys.stderr)
        return 1
    seen = workspace_dir() / f".{e.slug}.hints"  # how many were shown, for "the next one"
    try:
        shown_before = int(seen.read_text().strip())
    except (OSError, ValueError):
        shown_before = 0
    n = args.n if args.n is not None else min(shown_before + 1, len(hints))
    if not 1 <= n <= len(hints):
        print(f"{e.slug} has hints 1 to {len(hints)}, not {n}", file=sys.stderr)
        return 2
    print(f"Hint {n} of {len(hints)} ({e.slug}):\n")
    print(hints[n - 1])
    if n < len(hints):
        print(f"\nThe next one: {_entry()} hint {e.slug}")
    if n > shown_before:
        try:
            seen.parent.mkdir(parents=True, exist_ok=True)
            seen.write_text(str(n))
        except OSError:
            pass
    return 0


def cmd_solution(args) -> int:
    e = find_exercise(args.id, args.exercises)
    from .solution import reference_source

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
    print(f"exercises   {len(list_exercises(args.exercises))} in {shown(folder)}")
    modes = ["local"] + (["gpu"] if cuda else [])
    print(f"can judge   modes {', '.join(modes)}" + ("" if cuda else " (tests marked @gpu are skipped)"))
    return 0


def _selected(ids: list[str], folder) -> list:
    """The exercises ``ids`` name, in order: an exercise id, or a chapter id for all of that chapter's; none: all."""
    everything = list_exercises(folder)
    if not ids:
        return everything
    chapters = {c.id for c in load_chapters(folder)}
    out = []
    for i in ids:
        if i in chapters:
            mine = [e for e in everything if e.chapter == i]
        else:
            try:
                mine = [find_exercise(i, folder)]
            except ExerciseError as ex:
                raise ExerciseError(f"{ex}; or a chapter: {', '.join(sorted(chapters))}") from None
        out += [e for e in mine if e not in out]
    return out


def _import_targets(exercises) -> None:
    """Import the engine's modules of every target in this thread, before ``check``'s threads do: two threads
    importing minisgl for the first time at once can see a module half-initialised (a circular import's
    ImportError). A module that does not import is left to ``check_exercise`` to report."""
    import importlib

    for e in exercises:
        for t in e.targets:
            try:
                importlib.import_module(t.module)
            except Exception:  # noqa: BLE001, S110 - reported by check_exercise, with the exercise
                pass


def cmd_check(args) -> int:
    from .validate import check_exercise

    if args.seeds < 1:
        print(f"error: --seeds must be 1 or more (got {args.seeds})", file=sys.stderr)
        return 2
    exercises = _selected(args.ids, args.exercises)
    if not exercises:
        print("no exercises found", file=sys.stderr)
        return 1
    style = style_for(sys.stdout)
    if args.browser:
        from browser.check import build_assets, check_browser
        from browser.node import NodeRunnerError

        err = build_assets()
        if err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        try:
            results = check_browser(exercises, Path(args.exercises) if args.exercises else None)
        except NodeRunnerError as ex:
            print(f"error: {ex}", file=sys.stderr)
            return 2
    else:
        workers = max(1, min(len(exercises), args.jobs or os.cpu_count() or 1))
        _import_targets(exercises)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda e: check_exercise(e, trusted=args.trusted, seeds=args.seeds), exercises))
    bad = 0
    for e, report in zip(exercises, results):
        problems = report.problems
        if problems:
            bad += 1
            print(style("FAIL", "31") + f" {e.slug}")
            for p in problems:
                print("     - " + p.replace("\n", "\n       "))
        else:
            n = len(e.mutant_paths)
            mode = ", same verdicts in trusted mode" if args.trusted else ""
            if args.browser:
                mode = " in Pyodide (Node runner)" if "browser" in e.modes else " (not judged: no browser mode)"
            print(style("ok  ", "32") + f" {e.slug}  (reference and alternatives accepted; starter and {n} mutants "
                                        f"fail{mode}; {report.judged} judgings)")
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
    p.add_argument("--trusted", action="store_true",
                   help="judge as the grading server does: a referee process decides (docs/judge.md)")
    p.add_argument("--seed", type=int, default=None, help="the seed of the hidden inputs (default: a new one)")
    p.set_defaults(fn=cmd_test)
    p = sub.add_parser("hint", help="print a hint (the next one, or hint N)")
    p.add_argument("id")
    p.add_argument("n", nargs="?", type=int, help="which hint, from 1 (default: the next one)")
    p.set_defaults(fn=cmd_hint)
    p = sub.add_parser("solution", help="print the reference solution")
    p.add_argument("id")
    p.set_defaults(fn=cmd_solution)
    p = sub.add_parser("check", help="validate exercises (maintainers)")
    p.add_argument("ids", nargs="*", help="exercise or chapter ids (default: the whole bank)")
    p.add_argument("--jobs", type=int, default=0, help="exercises checked in parallel (default: CPU count)")
    p.add_argument("--seeds", type=int, default=MUTANT_SEEDS, metavar="N",
                   help=f"every mutant judged under N seeds, rejected under each (default: {MUTANT_SEEDS})")
    p.add_argument("--browser", action="store_true",
                   help="judge in Pyodide through the Node runner instead (the exercises that list browser)")
    p.add_argument("--trusted", action="store_true",
                   help="also judge every file in trusted mode: same verdicts (a mutant's up to its first failure)")
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

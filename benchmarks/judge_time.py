"""How long a judging takes: this judge against a baseline judge, run interleaved in one script.

    python benchmarks/judge_time.py [--baseline COMMIT] [--rounds 7] [--exercise graph-capture-loop]

The baseline is an earlier commit of this repository (default: 3020191, the judge before its warm
children; d291150, the judge before the trust model, can no longer judge with today's judge.testing),
checked out into a temporary git worktree. Each round runs, one after the other, the wall time of
`practice/judge.py test EXERCISE REFERENCE`:

- baseline: the baseline's judge on the baseline's exercise;
- local: this judge on the *same* exercise folder as the baseline (the judge's own cost, like for like);
- local, today's tests: this judge on this checkout's exercise (the tests grew with the bank);
- trusted: this judge in trusted mode (`--trusted`) on this checkout's exercise.

It prints the median of each and its ratio to the baseline. The machine is noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wall(cmd: list[str], cwd: Path) -> float:
    """The wall time of ``cmd`` run in ``cwd``; the script ends with its output if it fails."""
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"failed in {cwd}: {' '.join(cmd)}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return elapsed


@contextlib.contextmanager
def baseline_tree(commit: str, tmp: str) -> Iterator[Path]:
    """``commit`` checked out in a git worktree under ``tmp`` (with this checkout's models), removed after."""
    base = Path(tmp) / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), commit], cwd=ROOT, check=True)
    try:
        (base / "models").symlink_to(ROOT / "models")
        yield base
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="3020191", help="the commit to compare with")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--exercise", default="graph-capture-loop")
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="judge-baseline-") as tmp, baseline_tree(args.baseline, tmp) as base:
        # the baseline's exercise, as this judge reads exercises (a chapters file, chapter ids)
        same = Path(tmp) / "exercises"
        shutil.copytree(base / "exercises" / args.exercise, same / args.exercise)
        shutil.copyfile(ROOT / "exercises" / "chapters.toml", same / "chapters.toml")
        toml = same / args.exercise / "exercise.toml"
        toml.write_text(re.sub(r'chapter = ".*"', 'chapter = "cuda-graph"', toml.read_text()))
        ref = Path(tmp) / "reference.py"
        ref.write_text(subprocess.run([py, "practice/judge.py", "solution", args.exercise], cwd=ROOT,
                                      capture_output=True, text=True, check=True).stdout)
        runs = {
            "baseline": ([py, "practice/judge.py", "test", args.exercise, str(ref)], base),
            "local (baseline's tests)": ([py, "practice/judge.py", "--exercises", str(same), "test",
                                          args.exercise, str(ref)], ROOT),
            "local (today's tests)": ([py, "practice/judge.py", "test", args.exercise, str(ref)], ROOT),
            "trusted (today's tests)": ([py, "practice/judge.py", "test", args.exercise, str(ref), "--trusted"],
                                        ROOT),
        }
        times: dict[str, list[float]] = {k: [] for k in runs}
        for i in range(args.rounds + 1):
            for name, (cmd, cwd) in runs.items():
                t = wall(cmd, cwd)
                if i:  # the first round warms the file cache
                    times[name].append(t)
            print(f"round {i}/{args.rounds}", file=sys.stderr)
    base_median = statistics.median(times["baseline"])
    print(f"{args.exercise}: median of {args.rounds} wall times of `practice/judge.py test` (reference solution)")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:26s} {m:6.2f} s  x{m / base_median:.2f}   ({', '.join(f'{t:.2f}' for t in ts)})")


if __name__ == "__main__":
    main()

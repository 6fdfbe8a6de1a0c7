"""How long `check` takes: this judge against a baseline judge, side by side in one script.

    python benchmarks/check_time.py [--baseline COMMIT] [--rounds 1] [--jobs 2] [ids ...]

The baseline is an earlier commit (default: 3020191, the judge before its warm children: one child per
`check` batch, torch imported again for each), checked out into a temporary git worktree. Each round runs
`practice/judge.py check --jobs J IDS` there and here, one after the other, on each tree's own bank (the
same exercises), and both must pass. It prints the median wall time of each and the ratio. The machine is
noisy: read the ratio, and run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wall(cmd: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"check failed in {cwd}: {' '.join(cmd)}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="3020191", help="the commit to compare with")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="check's --jobs, the same on both sides")
    ap.add_argument("ids", nargs="*", help="exercise or chapter ids (default: the whole bank)")
    args = ap.parse_args()
    cmd = [sys.executable, "practice/judge.py", "check", "--jobs", str(args.jobs), *args.ids]
    with tempfile.TemporaryDirectory(prefix="check-baseline-") as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.baseline], cwd=ROOT, check=True)
        try:
            (base / "models").symlink_to(ROOT / "models")
            times: dict[str, list[float]] = {"baseline": [], "this judge": []}
            for i in range(args.rounds):
                times["baseline"].append(wall(cmd, base))
                times["this judge"].append(wall(cmd, ROOT))
                print(f"round {i + 1}/{args.rounds}: baseline {times['baseline'][-1]:.1f} s, "
                      f"this judge {times['this judge'][-1]:.1f} s", file=sys.stderr)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    b = statistics.median(times["baseline"])
    what = " ".join(args.ids) or "the whole bank"
    print(f"`practice/judge.py check --jobs {args.jobs}` of {what}: median of {args.rounds} wall time(s)")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:12s} {m:7.1f} s  x{m / b:.2f}   ({', '.join(f'{t:.1f}' for t in ts)})")


if __name__ == "__main__":
    main()

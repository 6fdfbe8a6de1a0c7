"""How long `check` takes: this judge against a baseline judge, side by side in one script.

    python benchmarks/check_time.py [--baseline COMMIT] [--rounds 1] [--jobs 2] [ids ...]

The baseline is an earlier commit (default: 3020191, the judge before its warm children: one child per
`check` batch, torch imported again for each), checked out into a temporary git worktree. Each round runs
`practice/judge.py check --jobs J IDS` there and here, one after the other, on each tree's own bank (the
same exercises; here with `--seeds 1`, as the baseline judged each mutant once), and both must pass. It
prints the median wall time of each and the ratio. The machine is noisy: read the ratio, on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_time import ROOT, baseline_tree, wall  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="3020191", help="the commit to compare with")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="check's --jobs, the same on both sides")
    ap.add_argument("ids", nargs="*", help="exercise or chapter ids (default: the whole bank)")
    args = ap.parse_args()
    cmd = [sys.executable, "practice/judge.py", "check", "--jobs", str(args.jobs), *args.ids]
    with tempfile.TemporaryDirectory(prefix="check-baseline-") as tmp, baseline_tree(args.baseline, tmp) as base:
        times: dict[str, list[float]] = {"baseline": [], "this judge": []}
        for i in range(args.rounds):
            times["baseline"].append(wall(cmd, base))
            times["this judge"].append(wall(cmd + ["--seeds", "1"], ROOT))  # like the baseline's: one seed
            print(f"round {i + 1}/{args.rounds}: baseline {times['baseline'][-1]:.1f} s, "
                  f"this judge {times['this judge'][-1]:.1f} s", file=sys.stderr)
    b = statistics.median(times["baseline"])
    what = " ".join(args.ids) or "the whole bank"
    print(f"`practice/judge.py check --jobs {args.jobs}` of {what}: median of {args.rounds} wall time(s)")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:12s} {m:7.1f} s  x{m / b:.2f}   ({', '.join(f'{t:.1f}' for t in ts)})")


if __name__ == "__main__":
    main()

"""How long a runner takes to judge a job: the local executor's warm judge against a local verdict, in one script.

    python benchmarks/runner_time.py [--rounds 5] [ids ...]

For each exercise (default: sampling-params-validate, graph-capture-loop, tiny-engine), each round judges the
reference, one after the other:

- local CLI: `practice/judge.py test ID REFERENCE`, its wall time (a new process, as a learner runs it);
- local, warm: a local judging (``judge_isolated``) in this process, after a first one (its warm child kept);
- runner, cold: the trusted judging as the local executor ran it before its warm judge: a new
  `python -m runner.job IN OUT` process per job (its reference and learner processes started afresh);
- runner, warm: the same job through ``LocalExecutor.judge`` (the slot's warm judge, after its first job).

It prints the median of each, and runner warm / local CLI (issue 18's goal: <= 1.5) and runner warm / local warm.
The machine is noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.exercise import find_exercise  # noqa: E402
from judge.isolation import Judging, judge_isolated  # noqa: E402
from judge.solution import reference_source  # noqa: E402
from runner.executors import LocalExecutor, Slot  # noqa: E402


def wall(fn) -> float:
    t0 = time.monotonic()
    fn()
    return time.monotonic() - t0


def cli_local(slug: str, ref: Path) -> None:
    out = subprocess.run([sys.executable, "practice/judge.py", "test", slug, str(ref)], cwd=ROOT,
                         capture_output=True, text=True)
    if "accepted" not in out.stdout.lower():
        raise SystemExit(f"{slug}: the local CLI did not accept the reference:\n{out.stdout[-2000:]}{out.stderr}")


def cold_runner(slug: str, source: str, tmp: Path) -> None:
    job = tmp / "job"
    (job / "in").mkdir(parents=True, exist_ok=True)
    (job / "out").mkdir(exist_ok=True)
    (job / "in" / "job.json").write_text(json.dumps({"exercise": slug, "mode": "local", "run": False, "seed": 7,
                                                     "role": "trusted"}))
    (job / "in" / "submission.py").write_text(source)
    subprocess.run([sys.executable, "-m", "runner.job", str(job / "in"), str(job / "out")], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    verdict = json.loads((job / "out" / "verdict.json").read_text())
    if verdict["status"] != "accepted":
        raise SystemExit(f"{slug}: the cold runner did not accept the reference: {verdict['message'][:500]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("ids", nargs="*", default=["sampling-params-validate", "graph-capture-loop", "tiny-engine"])
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="runner-time-") as tmp:
        executor = LocalExecutor(work_dir=str(Path(tmp) / "work"))
        executor.prepare()
        slot, never = Slot("cpu0"), threading.Event()
        try:
            for slug in args.ids:
                ex = find_exercise(slug)
                source = reference_source(ex)
                ref = Path(tmp) / f"{slug}.py"
                ref.write_text(source)
                job = {"id": 1, "exercise": slug, "code": source, "mode": "cpu", "run": False}

                def local_warm(ex=ex, source=source) -> None:
                    v = judge_isolated([Judging(ex, source)])[0].verdict
                    assert v.status == "accepted", v.message

                def runner_warm(job=job) -> None:
                    v = executor.judge(job, slot, never).verdict
                    assert v["status"] == "accepted", v["message"][:500]

                local_warm()
                runner_warm()  # the first job of the slot starts its judge
                times: dict[str, list[float]] = {"local CLI": [], "local, warm": [], "runner, cold": [],
                                                 "runner, warm": []}
                for i in range(args.rounds):
                    times["local CLI"].append(wall(lambda: cli_local(slug, ref)))
                    times["local, warm"].append(wall(local_warm))
                    times["runner, cold"].append(wall(lambda: cold_runner(slug, source, Path(tmp))))
                    times["runner, warm"].append(wall(runner_warm))
                    print(f"{slug} round {i + 1}/{args.rounds}: " + ", ".join(f"{k} {v[-1]:.2f} s"
                                                                              for k, v in times.items()),
                          file=sys.stderr, flush=True)
                rows.append((slug, {k: statistics.median(v) for k, v in times.items()}))
        finally:
            executor.close()
    print(f"\nmedian of {args.rounds} rounds, seconds (reference solution, Submit):")
    print(f"{'exercise':<26}{'local CLI':>10}{'local warm':>12}{'runner cold':>13}{'runner warm':>13}"
          f"{'warm/CLI':>10}{'warm/local warm':>17}")
    for slug, m in rows:
        print(f"{slug:<26}{m['local CLI']:>10.2f}{m['local, warm']:>12.2f}{m['runner, cold']:>13.2f}"
              f"{m['runner, warm']:>13.2f}{m['runner, warm'] / m['local CLI']:>10.2f}"
              f"{m['runner, warm'] / m['local, warm']:>17.2f}")
    print("goal (issue 18): runner warm / local CLI <= 1.5")
    return 0


if __name__ == "__main__":
    sys.exit(main())

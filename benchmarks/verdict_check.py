"""What checking a runner's verdict at the door costs (``web/results.py``: the verdict schema with jsonschema, the
recount), in one process on this machine's CPU.

    python benchmarks/verdict_check.py [--repeat 20]

Printed, the median of --repeat: a typical verdict (7 tests, short messages), a large one (100 tests of 4000
characters of output each, what the judge's own caps allow), and the largest the site takes (1000 tests of about
1 KiB, a body of about 1 MB, just under MAX_RESULT_BYTES).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from web.results import checked_verdict  # noqa: E402


def verdict(tests: int, chars: int) -> dict:
    return {"status": "accepted", "mode": "gpu", "seed": 7, "metrics": {"decode_ms": 1.5},
            "tests": [{"name": f"test_{i}", "status": "pass", "ms": 1.0, "doc": "what it checks",
                       "output": "o" * chars, "message": ""} for i in range(tests)]}


def median_ms(v: dict, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        checked_verdict(v)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    for name, v in (("typical (7 tests)", verdict(7, 40)), ("large (100 x 4000 chars)", verdict(100, 4000)),
                    ("largest (1000 x 900 chars)", verdict(1000, 900))):
        size = len(json.dumps({"lease_id": "x" * 32, "verdict": v}))
        print(f"{name:28s} body {size / 1024:8.1f} KiB   check {median_ms(v, args.repeat):8.2f} ms")


if __name__ == "__main__":
    main()

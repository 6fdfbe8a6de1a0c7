"""Exercise bench-summary: percentile and summarize.

Your code runs as if written in minisgl/benchmark.py: its globals are there (math, Counter, RequestResult,
describe_ms, which calls your percentile).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from minisgl.benchmark import RequestResult, describe_ms


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of values, interpolated linearly between the closest ranks (numpy's default);
    ValueError for no values or q outside 0..100."""
    raise NotImplementedError("write percentile")


def summarize(results: Sequence[RequestResult], duration_s: float) -> dict[str, Any]:
    """The figures of a run (the keys of the statement). Latencies, token counts and throughputs count the
    completed requests only; throughputs are over the whole duration_s."""
    raise NotImplementedError("write summarize")

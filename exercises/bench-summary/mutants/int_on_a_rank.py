"""percentile, "-> float": when the position falls on a rank it returns that value as it is, an int for int values."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from minisgl.benchmark import RequestResult, describe_ms


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), interpolated linearly between the closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not within 0..100")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    if pos == lo:
        return s[lo]
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(results: Sequence[RequestResult], duration_s: float) -> dict[str, Any]:
    """The figures of a run. Throughputs count completed requests over the whole duration."""
    ok = [r for r in results if r.ok]
    out_tokens = sum(r.output_tokens for r in ok)
    reported = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
    errors = Counter(r.error for r in results if not r.ok)
    per_s = (lambda x: x / duration_s) if duration_s > 0 else (lambda x: 0.0)
    return {
        "requests": len(results),
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "errors": [{"error": e, "count": c} for e, c in errors.most_common(10)],
        "duration_s": duration_s,
        "request_throughput": per_s(len(ok)),
        "output_throughput": per_s(out_tokens),
        "total_input_tokens": sum(r.input_len for r in ok),
        "total_output_tokens": out_tokens,
        "server_prompt_tokens": sum(reported) if ok and len(reported) == len(ok) else None,
        "requested_output_tokens": sum(r.output_len for r in ok),
        "short_outputs": sum(r.output_tokens < r.output_len for r in ok),
        "ttft_ms": describe_ms([r.ttft_s for r in ok if r.ttft_s is not None]),
        "itl_ms": describe_ms([gap for r in ok for gap in r.itl_s]),
        "tpot_ms": describe_ms([t for r in ok if (t := r.tpot_s) is not None]),
        "e2e_ms": describe_ms([r.e2e_s for r in ok if r.e2e_s is not None]),
    }

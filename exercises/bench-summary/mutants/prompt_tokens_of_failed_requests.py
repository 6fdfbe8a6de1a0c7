"""summarize, "a failed request's times and tokens are left out ... even the ones it has": server_prompt_tokens,
once every completed request has a count, sums the counts of the failed ones too."""

import math
from collections import Counter

from minisgl.benchmark import describe_ms


def percentile(values, q):
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not within 0..100")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(results, duration_s):
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
        "server_prompt_tokens": sum(r.prompt_tokens or 0 for r in results) if ok and len(reported) == len(ok) else None,
        "requested_output_tokens": sum(r.output_len for r in ok),
        "short_outputs": sum(r.output_tokens < r.output_len for r in ok),
        "ttft_ms": describe_ms([r.ttft_s for r in ok if r.ttft_s is not None]),
        "itl_ms": describe_ms([gap for r in ok for gap in r.itl_s]),
        "tpot_ms": describe_ms([t for r in ok if (t := r.tpot_s) is not None]),
        "e2e_ms": describe_ms([r.e2e_s for r in ok if r.e2e_s is not None]),
    }

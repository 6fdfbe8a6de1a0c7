"""A correct solution written differently: the fraction weights both neighbours, the summary is built step by step,
and the errors are counted and ordered by hand."""

import math

from minisgl.benchmark import describe_ms


def percentile(values, q):
    if len(values) == 0 or q < 0 or q > 100:
        raise ValueError(f"no percentile {q} of {len(values)} values")
    s = sorted(values)
    pos = q / 100 * (len(s) - 1)
    lo = int(pos)
    frac = pos - lo
    if frac == 0:
        return float(s[lo])
    return s[lo] * (1 - frac) + s[lo + 1] * frac


def summarize(results, duration_s):
    done = [r for r in results if r.ok]
    counts, first = {}, {}
    for i, r in enumerate(results):
        if not r.ok:
            counts[r.error] = counts.get(r.error, 0) + 1
            first.setdefault(r.error, i)
    ordered = sorted(counts, key=lambda e: (-counts[e], first[e]))[:10]
    tokens = sum(r.output_tokens for r in done)
    rate = 1 / duration_s if duration_s > 0 else 0.0
    prompts = [r.prompt_tokens for r in done]
    ttft, itl, tpot, e2e = [], [], [], []
    for r in done:
        if r.ttft_s is not None:
            ttft.append(r.ttft_s)
        itl.extend(r.itl_s)
        if r.tpot_s is not None:
            tpot.append(r.tpot_s)
        if r.e2e_s is not None:
            e2e.append(r.e2e_s)
    summary = {
        "requests": len(results),
        "completed": len(done),
        "failed": len(results) - len(done),
        "errors": [{"error": e, "count": counts[e]} for e in ordered],
        "duration_s": duration_s,
        "request_throughput": len(done) * rate,
        "output_throughput": tokens * rate,
        "total_input_tokens": sum(r.input_len for r in done),
        "total_output_tokens": tokens,
        "server_prompt_tokens": sum(prompts) if done and None not in prompts else None,
        "requested_output_tokens": sum(r.output_len for r in done),
        "short_outputs": len([r for r in done if r.output_tokens < r.output_len]),
    }
    summary["ttft_ms"] = describe_ms(ttft)
    summary["itl_ms"] = describe_ms(itl)
    summary["tpot_ms"] = describe_ms(tpot)
    summary["e2e_ms"] = describe_ms(e2e)
    return summary

"""Tests for bench-summary: percentile and summarize of minisgl/benchmark.py on hand-made and random per-request
records (no server), compared with numpy's percentile rule and with the engine's summarize, within 1e-9."""

import math

import torch

from judge.testing import expected, rng
from minisgl import benchmark as bench
from minisgl.benchmark import RequestResult

KEYS = ("requests", "completed", "failed", "errors", "duration_s", "request_throughput", "output_throughput",
        "total_input_tokens", "total_output_tokens", "server_prompt_tokens", "requested_output_tokens",
        "short_outputs", "ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")


def model_percentile(values, q):
    """numpy's default rule, computed here."""
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def close(got, want, what):
    assert got is not None, f"{what}: a number, not None"
    assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), what


def refused(values, q) -> str:
    try:
        bench.percentile(values, q)
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - which exception, is what the test checks
        return type(e).__name__
    return "nothing"


def done(i, ttft, itl, e2e, out, asked, prompt=None, input_len=None):
    n_in = input_len if input_len is not None else 10 * (i + 1)
    return RequestResult(i, input_len=n_in, output_len=asked, arrival_s=0.0, sent_s=0.0, ok=True, ttft_s=ttft,
                         itl_s=list(itl), e2e_s=e2e, output_tokens=out, prompt_tokens=prompt, chunks=out)


def failed(i, error, ttft=None, itl=(), out=0, asked=8, input_len=50, e2e=None, prompt=None):
    """A failed request: before its first token (ttft None), or in the middle of its stream (then the server may
    have said its prompt count too)."""
    return RequestResult(i, input_len=input_len, output_len=asked, arrival_s=0.0, sent_s=0.0, ok=False, error=error,
                         ttft_s=ttft, itl_s=list(itl), e2e_s=e2e, output_tokens=out, prompt_tokens=prompt, chunks=out)


def shape(v):
    """v with every number replaced by '#' (the numbers are compared apart, within 1e-9)."""
    if isinstance(v, dict):
        return {k: shape(v[k]) for k in sorted(v, key=str)}
    if isinstance(v, (list, tuple)):
        return [shape(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return "#"
    return v


def numbers(v) -> list:
    if isinstance(v, dict):
        return [x for k in sorted(v, key=str) for x in numbers(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in numbers(item)]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return [float(v)]
    return []


def check_like_engine(results, duration_s, what):
    """summarize(results, duration_s) has the statement's keys, and each is the engine's (numbers within 1e-9)."""
    got = bench.summarize(results, duration_s)
    assert sorted(got) == sorted(KEYS), f"{what}: the keys of the summary"
    for key in KEYS:
        want_shape = expected(lambda: shape(bench.summarize(results, duration_s)[key]))  # noqa: B023
        assert shape(got[key]) == want_shape, f"{what}: {key!r} (None, texts and where the numbers are)"
        want = expected(lambda: torch.tensor(numbers(bench.summarize(results, duration_s)[key]),  # noqa: B023
                                             dtype=torch.float64))
        mine = torch.tensor(numbers(got[key]), dtype=torch.float64)
        assert torch.allclose(mine, want, rtol=1e-9, atol=1e-9), f"{what}: the numbers of {key!r}"


def draw_results(g, n):
    errors = ["APIConnectionError: Connection error.", "APIStatusError: 500 engine stopped",
              f"ReadTimeout: after {g.randint(2, 9)} s"]
    out = []
    for i in range(n):
        kind = g.choices(["ok", "early", "mid"], weights=[6, 1, 1])[0]
        ttft = round(g.uniform(0.01, 2.0), 4)
        if kind == "ok":
            k = g.randint(1, 12)
            itl = [round(g.uniform(0.005, 0.2), 4) for _ in range(k - 1)]
            e2e = ttft + sum(itl) + round(g.uniform(0.0, 0.01), 4)
            prompt = None if g.random() < 0.05 else g.randint(5, 200)
            out.append(done(i, ttft, itl, e2e, k, k + g.choice([0, 0, 0, g.randint(1, 5)]), prompt,
                            g.randint(5, 200)))
        elif kind == "early":
            out.append(failed(i, g.choice(errors), input_len=g.randint(5, 200)))
        else:
            k = g.randint(2, 8)
            out.append(failed(i, g.choice(errors), ttft=ttft, itl=[round(g.uniform(0.5, 3.0), 4) for _ in range(k)],
                              out=k, asked=k + 4))
    return out


# ------------------------------------------------------------------------------------------- examples

def test_example_percentile():
    """Linear interpolation between the closest ranks: [1, 2, 3, 4] -> p50 = 2.5; 1..10 -> p90 = 9.1."""
    close(bench.percentile([1, 2, 3, 4], 50), 2.5, "percentile([1, 2, 3, 4], 50): halfway between 2 and 3")
    close(bench.percentile(list(range(1, 11)), 90), 9.1, "percentile(1..10, 90): position 8.1 of the sorted list")
    close(bench.percentile([5, 1, 3], 0), 1, "the 0th percentile is the minimum")
    close(bench.percentile([5, 1, 3], 100), 5, "the 100th percentile is the maximum")


def test_example_summary():
    """Two completed requests and two failed ones (one of them in the middle of its stream) over 2 s."""
    results = [
        done(0, ttft=0.1, itl=[0.02, 0.02, 0.02], e2e=0.16, out=4, asked=4, prompt=10),
        done(1, ttft=0.3, itl=[0.04], e2e=0.34, out=2, asked=3, prompt=20),
        failed(2, "APIConnectionError: Connection error."),
        failed(3, "APIConnectionError: Connection error.", ttft=5.0, itl=[1.0, 1.0], out=3),
    ]
    s = bench.summarize(results, 2.0)
    assert (s["requests"], s["completed"], s["failed"]) == (4, 2, 2), "(requests, completed, failed)"
    close(s["request_throughput"], 1.0, "request_throughput: 2 completed requests over 2 s")
    close(s["output_throughput"], 3.0, "output_throughput: 6 tokens of completed requests over 2 s")
    close(s["ttft_ms"]["mean"], 200.0, "ttft_ms mean: (100 + 300) / 2; the failed request's 5 s is left out")
    close(s["itl_ms"]["p50"], 20.0, "itl_ms p50: the median of every gap (20, 20, 20, 40), not of each request's mean")
    close(s["itl_ms"]["mean"], 25.0, "itl_ms mean: (20 + 20 + 20 + 40) / 4")
    close(s["e2e_ms"]["p90"], 322.0, "e2e_ms p90: 160 + (340 - 160) * 0.9")
    assert s["errors"] == [{"error": "APIConnectionError: Connection error.", "count": 2}], "errors: text and count"


# ------------------------------------------------------------------------------------------- percentile

def test_percentile_known_values():
    """Corners: one value, two values, duplicates, unsorted input, a tuple, q at 0 and 100 of a long list."""
    close(bench.percentile([7.0], 99), 7.0, "one value: every percentile is that value")
    close(bench.percentile([7.0], 0), 7.0, "one value, q = 0")
    close(bench.percentile([2.0, 4.0], 25), 2.5, "[2, 4], q = 25: a quarter of the way")
    close(bench.percentile([9, 1, 5, 3, 7], 50), 5, "unsorted input is sorted first: the median of 1, 3, 5, 7, 9")
    close(bench.percentile((9, 1, 5, 3, 7), 75), 7, "a tuple works like a list")
    close(bench.percentile([3, 3, 3, 1], 50), 3, "duplicates count: sorted 1, 3, 3, 3, median 3")
    close(bench.percentile(list(range(101)), 99), 99, "0..100: p99 is 99")
    close(bench.percentile(list(range(101)), 100), 100, "q = 100 on a long list: the last value (no index past it)")
    close(bench.percentile([10, 20, 30], 100), 30, "q = 100: the maximum")
    close(bench.percentile([0.5, 0.25], 100), 0.5, "q = 100 on two values")
    kinds = [type(bench.percentile(v, q)).__name__ for v, q in (([9, 1, 5, 3, 7], 50), ([4], 99), ([1, 2, 3], 100))]
    assert kinds == ["float"] * 3, "percentile returns a float, even when it lands on an int value"


def test_percentile_random():
    """Random values and q (0 and 100 included): numpy's rule, within 1e-9."""
    g = rng()
    for _ in range(12):
        n = g.choice([1, 2, 3, g.randint(4, 300)])
        values = [round(g.expovariate(1.0) * 100, 6) for _ in range(n)]
        for q in (0, 50, 90, 99, 100, round(g.uniform(0, 100), 3)):
            close(bench.percentile(values, q), model_percentile(values, q), f"percentile of {n} values, q = {q}")


def test_percentile_refuses():
    """No values, or q outside 0..100: ValueError."""
    g = rng()
    assert refused([], 50) == "ValueError", "percentile([], 50): no values, ValueError"
    assert refused((), 0) == "ValueError", "percentile((), 0): no values, ValueError"
    assert refused([1.0, 2.0], -0.5) == "ValueError", "q = -0.5 is outside 0..100: ValueError"
    assert refused([1.0, 2.0], 100.5) == "ValueError", "q = 100.5 is outside 0..100: ValueError"
    assert refused([1.0, 2.0, 3.0], 100 + g.randint(1, 100)) == "ValueError", "q above 100: ValueError"
    assert refused([1.0, 2.0, 3.0], -g.randint(1, 100)) == "ValueError", "q below 0: ValueError"


def test_percentile_leaves_values_alone():
    """percentile sorts a copy: the caller's list keeps its order."""
    g = rng()
    values = [g.randint(0, 1000) for _ in range(20)]
    before = list(values)
    bench.percentile(values, 50)
    assert values == before, "the list passed in must not be reordered"


# ------------------------------------------------------------------------------------------- summarize

def test_summary_leaves_out_failed_requests():
    """A request that failed mid-stream has a TTFT, gaps, tokens and a prompt count: none of them count; it counts as
    failed."""
    g = rng()
    ttft = round(g.uniform(0.05, 0.5), 3)
    results = [done(0, ttft, [0.01, 0.03], ttft + 0.05, 3, 3, prompt=7, input_len=7),
               failed(1, "boom", ttft=9.0, itl=[4.0, 4.0, 4.0], out=4, asked=4, input_len=100, e2e=21.0, prompt=100)]
    s = bench.summarize(results, 1.0)
    close(s["ttft_ms"]["p99"], ttft * 1000, "ttft_ms: the completed request's only")
    close(s["itl_ms"]["p50"], 20.0, "itl_ms: the completed request's gaps only (10 and 30 ms: p50 20 ms)")
    close(s["e2e_ms"]["mean"], (ttft + 0.05) * 1000, "e2e_ms: the completed request's only (the failed one's 21 s is "
          "left out)")
    counts = (s["total_input_tokens"], s["total_output_tokens"], s["requested_output_tokens"], s["short_outputs"])
    assert counts == (7, 3, 3, 0), \
        "(total_input_tokens, total_output_tokens, requested_output_tokens, short_outputs) of completed requests"
    close(s["output_throughput"], 3.0, "output_throughput: the completed request's 3 tokens over 1 s")
    close(s["request_throughput"], 1.0, "request_throughput: 1 completed request over 1 s")
    assert (s["completed"], s["failed"]) == (1, 1), "(completed, failed)"
    assert s["server_prompt_tokens"] == 7, "server_prompt_tokens: the completed request's count (the failed one's 100 " \
                                           "is left out)"


def test_summary_itl_pools_every_gap():
    """One long request and one short one: the ITL percentiles are over all gaps together."""
    g = rng()
    fast, slow = round(g.uniform(0.01, 0.02), 4), round(g.uniform(0.3, 0.5), 4)
    k = g.randint(20, 40)
    results = [done(0, 0.1, [fast] * k, 0.1 + fast * k, k + 1, k + 1), done(1, 0.1, [slow], 0.1 + slow, 2, 2)]
    s = bench.summarize(results, 3.0)
    close(s["itl_ms"]["p50"], fast * 1000, f"itl_ms p50: {k} gaps of {fast * 1000:.1f} ms and one of "
                                           f"{slow * 1000:.0f} ms: the median gap is a fast one")
    close(s["itl_ms"]["mean"], (fast * k + slow) / (k + 1) * 1000, "itl_ms mean: over every gap")
    close(s["tpot_ms"]["mean"], (fast + slow) / 2 * 1000, "tpot_ms: each request's (e2e - ttft) / (tokens - 1)")


def test_summary_throughput_over_the_duration():
    """Throughputs divide by the run's duration (not by the requests' own times); 0.0 for a duration <= 0."""
    g = rng()
    duration = round(g.uniform(5.0, 20.0), 2)
    results = [done(i, 0.1, [0.01] * 4, 0.2, 5, 5) for i in range(3)]
    s = bench.summarize(results, duration)
    close(s["request_throughput"], 3 / duration, f"3 requests over the run's {duration} s")
    close(s["output_throughput"], 15 / duration, f"15 tokens over the run's {duration} s")
    assert s["duration_s"] == duration, "duration_s: as given"
    for d in (0.0, -1.0):
        s = bench.summarize(results, d)
        got = (s["request_throughput"], s["output_throughput"])
        assert got == (0.0, 0.0), f"duration {d}: both throughputs are 0.0 (no division)"


def test_summary_server_prompt_tokens():
    """The server's prompt count is a sum only when every completed request has one."""
    g = rng()
    a, b = g.randint(5, 100), g.randint(5, 100)
    full = [done(0, 0.1, [], 0.1, 1, 1, prompt=a), done(1, 0.1, [], 0.1, 1, 1, prompt=b), failed(2, "x")]
    assert bench.summarize(full, 1.0)["server_prompt_tokens"] == a + b, "every completed request has a count: sum"
    partial = [done(0, 0.1, [], 0.1, 1, 1, prompt=a), done(1, 0.1, [], 0.1, 1, 1)]
    assert bench.summarize(partial, 1.0)["server_prompt_tokens"] is None, "one completed request has none: None"
    assert bench.summarize([failed(0, "x")], 1.0)["server_prompt_tokens"] is None, "nothing completed: None"
    assert bench.summarize([], 1.0)["server_prompt_tokens"] is None, "no requests: None"
    zero = [done(0, 0.1, [], 0.1, 1, 1, prompt=0), done(1, 0.1, [], 0.1, 1, 1, prompt=a)]
    assert bench.summarize(zero, 1.0)["server_prompt_tokens"] == a, "a count of 0 is a count (not a missing one)"


def test_summary_zero_latencies_count():
    """A latency of 0.0 (a clock that did not tick) is a value like any other: only None is left out."""
    g = rng()
    e2e = round(g.uniform(0.2, 0.6), 3)
    results = [done(0, 0.0, [0.0, 0.02], e2e, 3, 3), done(1, 0.1, [0.04], 0.0, 2, 2)]
    s = bench.summarize(results, 1.0)
    close(s["ttft_ms"]["mean"], 50.0, "ttft_ms mean of 0 and 100 ms: both count")
    close(s["e2e_ms"]["mean"], e2e * 1000 / 2, f"e2e_ms mean of {e2e * 1000:.0f} and 0 ms: both count")
    close(s["itl_ms"]["p50"], 20.0, "itl_ms: the gaps 0, 20 and 40 ms all count (p50 20 ms)")


def test_summary_errors():
    """Failed requests' errors: most common first, ties in order of first appearance, at most 10."""
    g = rng()
    texts = [f"E{i}: {g.randint(100, 999)}" for i in range(12)]
    counts = [1, 3, 2, 3, 1, 1, 1, 1, 1, 1, 1, 1]
    results = [done(0, 0.1, [], 0.1, 1, 1)]
    for text, c in zip(texts, counts):
        results += [failed(len(results), text) for _ in range(c)]
    results.append(done(len(results), 0.1, [], 0.1, 1, 1))
    got = bench.summarize(results, 1.0)["errors"]
    order = [1, 3, 2, 0, 4, 5, 6, 7, 8, 9]
    assert got == [{"error": texts[i], "count": counts[i]} for i in order], \
        "errors: most common first, ties in order of first appearance, 10 at most, none for completed requests"


def test_summary_counts():
    """requests, completed, failed, token totals and short outputs on a mix."""
    g = rng()
    results = [done(0, 0.1, [0.01], 0.2, 2, 2 + g.randint(1, 3), input_len=11),
               done(1, 0.1, [0.01] * 3, 0.2, 4, 4, input_len=13),
               failed(2, "x", input_len=17, asked=9),
               done(3, 0.1, [0.01] * 2, 0.2, 3, 5, input_len=19)]
    s = bench.summarize(results, 1.0)
    got = (s["requests"], s["completed"], s["failed"], s["total_input_tokens"], s["total_output_tokens"],
           s["short_outputs"])
    assert got == (4, 3, 1, 43, 9, 2), \
        "(requests, completed, failed, total_input_tokens, total_output_tokens, short_outputs)"
    assert s["requested_output_tokens"] == results[0].output_len + 4 + 5, "requested_output_tokens: completed only"


def test_summary_of_nothing():
    """No results: zeros, no errors, every latency None."""
    s = bench.summarize([], 1.0)
    got = (s["requests"], s["completed"], s["failed"], s["errors"], s["total_output_tokens"], s["short_outputs"])
    assert got == (0, 0, 0, [], 0, 0), "(requests, completed, failed, errors, total_output_tokens, short_outputs)"
    assert (s["request_throughput"], s["output_throughput"]) == (0.0, 0.0), "throughputs of nothing: 0.0"
    none = {"mean": None, "p50": None, "p90": None, "p99": None}
    assert [s[k] for k in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")] == [none] * 4, "no latencies: all None"


def test_summary_like_engine():
    """Random runs (completed, failed before and during their streams): every key as the engine's."""
    g = rng()
    for round_ in range(3):
        results = draw_results(g, g.randint(5, 40))
        duration = round(g.uniform(1.0, 30.0), 3)
        check_like_engine(results, duration, f"random run {round_ + 1} ({len(results)} requests)")
    check_like_engine([done(0, 0.2, [], 0.25, 1, 1, prompt=3)], 0.5, "one request of one token")
    check_like_engine(draw_results(g, 6), 0.0, "duration 0")

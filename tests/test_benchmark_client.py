"""The benchmark client (minisgl/benchmark.py) without a server: argument parsing, the seeded workload, prompts of
exact token lengths, and the statistics. The end-to-end run against `minisgl serve` lives with the server's tests."""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys

import numpy as np
import pytest

from minisgl import benchmark as bench
from minisgl.benchmark import Length, RequestResult, WorkItem
from minisgl.testing import is_complete_model_dir, smollm2_dir
from tests.support import free_port, need


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench")
    bench.add_arguments(p)
    return p


# --------------------------------------------------------------------------------------------
# Arguments


@pytest.mark.parametrize("text, expected", [("8", Length(8, 8)), ("16-128", Length(16, 128)), (" 3-3 ", Length(3, 3)),
                                            ("1", Length(1, 1))])
def test_parse_length(text, expected):
    assert bench.parse_length(text) == expected


@pytest.mark.parametrize("text", ["abc", "", "5-2", "0", "0-4", "1-2-3", "1.5", "-3", "8-", "a-b"])
def test_parse_length_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text).replace("(", r"\(")):
        bench.parse_length(text)


def test_bad_length_is_an_argparse_error_naming_option_and_value(capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(["--url", "http://x", "--output-len", "32-8"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --output-len" in err and "'32-8'" in err


def test_defaults_and_options():
    a = _parser().parse_args(["--url", "http://h:1"])
    assert (a.model, a.num_requests, a.rate, a.seed, a.endpoint, a.ignore_eos, a.concurrency, a.out) == (
        None, 64, math.inf, 0, "completions", True, None, None)
    a = _parser().parse_args(["--url", "http://h:1", "--rate", "2.5", "--input-len", "16-128", "--output-len", "8",
                              "--no-ignore-eos", "--endpoint", "chat", "--concurrency", "4", "--seed", "7",
                              "--extra-body", '{"top_k": 1}'])
    assert (a.rate, a.input_len, a.output_len, a.ignore_eos, a.endpoint, a.concurrency, a.seed, a.extra_body) == (
        2.5, Length(16, 128), Length(8, 8), False, "chat", 4, 7, {"top_k": 1})


@pytest.mark.parametrize("option, value", [("--rate", "0"), ("--rate", "-1"), ("--rate", "nan"), ("--rate", "fast"),
                                           ("--num-requests", "0"), ("--concurrency", "x"), ("--extra-body", "[1]")])
def test_bad_values_are_argparse_errors(option, value, capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["--url", "http://x", option, value])
    err = capsys.readouterr().err
    assert f"argument {option}" in err and repr(value) in err


def test_length_draws_cover_the_range_inclusive():
    rng = random.Random(0)
    draws = [Length(3, 6).draw(rng) for _ in range(400)]
    assert set(draws) == {3, 4, 5, 6}
    assert {Length(9, 9).draw(rng) for _ in range(10)} == {9}
    assert bench.make_workload(3, 7, 2)[0][1:3] == (7, 2)  # an int is a fixed length


# --------------------------------------------------------------------------------------------
# The workload


def test_workload_is_determined_by_the_seed():
    a = bench.make_workload(32, Length(4, 40), Length(1, 20), rate=3.0, seed=5)
    b = bench.make_workload(32, Length(4, 40), Length(1, 20), rate=3.0, seed=5)
    c = bench.make_workload(32, Length(4, 40), Length(1, 20), rate=3.0, seed=6)
    assert a == b
    assert all(isinstance(w, WorkItem) for w in a)
    assert [w.prompt for w in a] != [w.prompt for w in c]
    assert [w.arrival_s for w in a] != [w.arrival_s for w in c]
    assert len({w.prompt for w in a}) == 32  # distinct places of the corpus


def test_rate_changes_only_the_arrivals():
    poisson = bench.make_workload(16, Length(4, 40), Length(1, 20), rate=2.0, seed=1)
    burst = bench.make_workload(16, Length(4, 40), Length(1, 20), rate=math.inf, seed=1)
    assert [w[:3] for w in poisson] == [w[:3] for w in burst]
    assert [w.arrival_s for w in burst] == [0.0] * 16


def test_poisson_arrivals_have_mean_gap_one_over_rate():
    rate = 4.0
    times = bench.arrival_times(20000, rate, random.Random(3))
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert times[0] == 0.0 and all(g >= 0 for g in gaps)
    assert statistics.fmean(gaps) == pytest.approx(1 / rate, rel=0.03)
    assert statistics.stdev(gaps) == pytest.approx(1 / rate, rel=0.05)  # exponential: stdev == mean
    assert bench.arrival_times(5, math.inf, random.Random(0)) == [0.0] * 5


def test_workload_arrivals_are_poisson_at_the_rate():
    items = bench.make_workload(3000, Length(2, 2), Length(1, 1), rate=10.0, seed=2)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(items, items[1:])]
    assert statistics.fmean(gaps) == pytest.approx(0.1, rel=0.06)


def test_words_stand_for_tokens_without_a_tokenizer():
    items = bench.make_workload(50, Length(1, 300), Length(5, 5), seed=0)
    assert [len(w.prompt.split()) for w in items] == [w.input_len for w in items]
    assert {w.output_len for w in items} == {5}


def _smollm2_tokenizer() -> bench.HFTokenizer:
    need(is_complete_model_dir(smollm2_dir()), "SmolLM2 is not set up: run python tools/setup_models.py")
    return bench.HFTokenizer(smollm2_dir())


def test_prompts_have_exact_smollm2_token_lengths():
    tok = _smollm2_tokenizer()
    items = bench.make_workload(200, Length(1, 400), Length(8, 32), seed=0, tokenizer=tok)
    assert [len(tok.encode(w.prompt)) for w in items] == [w.input_len for w in items]
    assert len({w.input_len for w in items}) > 100


def test_prompts_longer_than_the_corpus_have_exact_lengths():
    tok = _smollm2_tokenizer()
    corpus_tokens = len(tok.encode(bench.corpus_text()))
    n = corpus_tokens + 500
    (item,) = bench.make_workload(1, Length(n, n), Length(1, 1), seed=0, tokenizer=tok)
    assert len(tok.encode(item.prompt)) == n


def test_the_model_folder_is_the_default_tokenizer(tmp_path):
    assert isinstance(bench.default_tokenizer(None, "gpt-4o-mini"), bench.WordTokenizer)
    assert isinstance(bench.default_tokenizer(None, str(tmp_path)), bench.WordTokenizer)  # a folder without one
    with pytest.raises(bench.BenchmarkError, match="no tokenizer in"):
        bench.default_tokenizer(str(tmp_path), "m")
    with pytest.raises(bench.BenchmarkError, match="not found"):
        bench.default_tokenizer(str(tmp_path / "nowhere"), "m")
    tok = _smollm2_tokenizer()
    assert bench.default_tokenizer(None, str(smollm2_dir())).encode("Hello world") == tok.encode("Hello world")


# --------------------------------------------------------------------------------------------
# Statistics


def test_percentile_on_known_numbers():
    assert bench.percentile([1, 2, 3, 4], 50) == 2.5
    assert bench.percentile(list(range(1, 11)), 90) == pytest.approx(9.1)
    assert bench.percentile(list(range(101)), 99) == pytest.approx(99)
    assert bench.percentile([7.0], 99) == 7.0
    assert bench.percentile([5, 1, 3], 0) == 1 and bench.percentile([5, 1, 3], 100) == 5
    with pytest.raises(ValueError):
        bench.percentile([], 50)


def test_percentile_matches_numpy():
    rng = random.Random(0)
    values = [rng.expovariate(1.0) for _ in range(257)]
    for q in (0, 1, 50, 90, 99, 100):
        assert bench.percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_describe_is_in_milliseconds():
    d = bench.describe_ms([0.001, 0.002, 0.003, 0.004])
    assert d == pytest.approx({"mean": 2.5, "p50": 2.5, "p90": 3.7, "p99": 3.97})
    assert bench.describe_ms([]) == {"mean": None, "p50": None, "p90": None, "p99": None}


def _done(i: int, ttft: float, itl: list[float], e2e: float, out: int, asked: int) -> RequestResult:
    return RequestResult(i, input_len=10 * (i + 1), output_len=asked, arrival_s=0.0, sent_s=0.0, ok=True, ttft_s=ttft,
                         itl_s=itl, e2e_s=e2e, output_tokens=out, prompt_tokens=10 * (i + 1), chunks=out)


def test_summary_on_known_results():
    results = [
        _done(0, ttft=0.1, itl=[0.02, 0.02, 0.02], e2e=0.16, out=4, asked=4),
        _done(1, ttft=0.3, itl=[0.04], e2e=0.34, out=2, asked=3),
        RequestResult(2, 50, 8, 0.0, error="APIConnectionError: Connection error."),
        RequestResult(3, 60, 8, 0.0, error="APIConnectionError: Connection error."),
    ]
    s = bench.summarize(results, duration_s=2.0)
    assert (s["requests"], s["completed"], s["failed"]) == (4, 2, 2)
    assert s["errors"] == [{"error": "APIConnectionError: Connection error.", "count": 2}]
    assert s["request_throughput"] == pytest.approx(1.0)
    assert s["output_throughput"] == pytest.approx(3.0)  # 6 tokens over 2 s
    assert (s["total_input_tokens"], s["total_output_tokens"], s["server_prompt_tokens"]) == (30, 6, 30)
    assert (s["requested_output_tokens"], s["short_outputs"]) == (7, 1)
    assert s["ttft_ms"] == pytest.approx({"mean": 200, "p50": 200, "p90": 280, "p99": 298})
    assert s["itl_ms"]["mean"] == pytest.approx(25) and s["itl_ms"]["p50"] == pytest.approx(20)
    assert s["tpot_ms"]["mean"] == pytest.approx((20 + 40) / 2)  # (e2e - ttft) / (out - 1)
    assert s["e2e_ms"]["p50"] == pytest.approx(250)
    table = bench.format_table(s)
    assert "Failed requests:" in table and "x2: APIConnectionError" in table


def test_results_json_is_valid_json_and_repeatable():
    args = vars(_parser().parse_args(["--url", "http://h:1", "--input-len", "4-8", "--seed", "3"]))
    run = bench.BenchmarkRun("m", [_done(0, 0.1, [0.01], 0.11, 2, 2)], 1.0, bench.summarize([], 1.0))
    data = json.loads(json.dumps(bench.results_json(args, run, "words"), allow_nan=False))
    assert data["seed"] == 3 and data["args"]["rate"] == "inf" and data["args"]["input_len"] == "4-8"
    assert data["requests"][0]["tpot_s"] == pytest.approx(0.01)
    assert bench.jsonable({"func": print, "rate": math.nan}) == {"func": str(print), "rate": None}
    again = _parser().parse_args(["--url", data["args"]["url"], "--input-len", data["args"]["input_len"],
                                  "--rate", data["args"]["rate"], "--seed", str(data["seed"])])
    assert (again.input_len, again.rate, again.seed) == (Length(4, 8), math.inf, 3)


def test_unreachable_server_is_one_line_and_exit_2():
    """The command itself, in a process of its own (this test process may hold a running event loop: Playwright's)."""
    port = free_port(range(20000, 30000))  # free now: nothing listens there
    url = f"http://127.0.0.1:{port}"
    run = subprocess.run([sys.executable, "-m", "minisgl", "bench", "--url", url, "--num-requests", "1",
                          "--no-progress"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    err = run.stderr.strip()
    assert err.startswith("error: cannot reach the server at " + url) and "\n" not in err, err

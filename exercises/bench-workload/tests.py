"""Tests for bench-workload: parse_length, arrival_times and make_workload of minisgl/benchmark.py, on their own
(no server): exact values against the engine's and a model computed here, and which part each argument moves."""

import argparse
import math
import random

from judge.testing import expected, rng
from minisgl import benchmark as bench
from minisgl.benchmark import Length


def refusal(text: str) -> tuple[str, str] | None:
    """(exception type name, message) of what parse_length(text) raised, or None if it returned."""
    try:
        bench.parse_length(text)
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - which exception it is, is what the test checks
        return type(e).__name__, str(e)
    return None


def check_refused(text: str) -> None:
    got = refusal(text)
    assert got is not None, f"parse_length({text!r}) must raise argparse.ArgumentTypeError"
    kind, message = got
    assert kind == "ArgumentTypeError", f"parse_length({text!r}) must raise argparse.ArgumentTypeError, not {kind}"
    assert repr(text) in message, f"the message must show repr(text), {text!r}; it was: {message!r}"


def parsed(text: str) -> tuple[int, int]:
    got = bench.parse_length(text)
    assert isinstance(got, Length), f"parse_length({text!r}) must return a Length, not {type(got).__name__}"
    return got.lo, got.hi


def model_arrivals(n: int, rate: float, seed: int) -> list[float]:
    """The rule of the statement, computed here: 0, then + one expovariate(rate) draw per gap."""
    if math.isinf(rate):
        return [0.0] * n
    g, out, t = random.Random(seed), [], 0.0
    for _ in range(n):
        out.append(t)
        t += g.expovariate(rate)
    return out


class CharTokenizer:
    """One character is one token (so prompt lengths are exact and easy to check)."""

    name = "chars"

    def encode(self, text):
        return list(text)

    def decode(self, ids):
        return "".join(ids)


def workload(*args, **kwargs) -> list[tuple]:
    return [tuple(w) for w in bench.make_workload(*args, **kwargs)]


# ------------------------------------------------------------------------------------------- examples

def test_example_parse_length():
    """"8" is Length(8, 8), "16-128" is Length(16, 128); "0" and "5-2" are refused with ArgumentTypeError."""
    assert parsed("8") == (8, 8), "parse_length('8'): (lo, hi)"
    assert parsed("16-128") == (16, 128), "parse_length('16-128'): (lo, hi)"
    check_refused("0")
    check_refused("5-2")


def test_example_arrivals():
    """Rate 2/s from random.Random(1): 0.0 first, then gaps of expovariate(2); rate inf: all 0.0."""
    got = bench.arrival_times(5, 2.0, random.Random(1))
    assert got == model_arrivals(5, 2.0, 1), "arrival_times(5, 2.0, Random(1)): 0.0, then + expovariate(2.0) each"
    got = bench.arrival_times(4, math.inf, random.Random(1))
    assert got == [0.0, 0.0, 0.0, 0.0], "rate inf: everything arrives at once, at 0.0"


def test_example_workload():
    """make_workload(4, 3, Length(2, 5), rate=2.0, seed=7): the engine's requests (3-word prompts)."""
    got = workload(4, 3, Length(2, 5), rate=2.0, seed=7)
    assert [len(w[0].split()) for w in got] == [3, 3, 3, 3], "input_len 3: prompts of 3 words (WordTokenizer)"
    assert got == expected(lambda: workload(4, 3, Length(2, 5), rate=2.0, seed=7)), \
        "(prompt, input_len, output_len, arrival_s) of each request, as the engine's make_workload"


# ------------------------------------------------------------------------------------------- parse_length

def test_parse_length_accepts():
    """N and A-B (A <= B, both >= 1), with spaces around the text."""
    g = rng()
    n = g.randint(2, 5000)
    a = g.randint(2, 300)
    b = a + g.randint(1, 300)
    assert parsed("1") == (1, 1), "'1' is the smallest length"
    assert parsed(str(n)) == (n, n), f"{n!r}: a fixed length"
    assert parsed(f"{a}-{b}") == (a, b), f"'{a}-{b}': uniform {a}..{b}"
    assert parsed(f"{a}-{a}") == (a, a), f"'{a}-{a}': A == B is allowed"
    assert parsed(f"1-{b}") == (1, b), f"'1-{b}': 1 is allowed as the low end"
    assert parsed(f"  {a}-{b} ") == (a, b), "spaces around the text are allowed"
    assert parsed(f" {n}\n") == (n, n), "spaces around the text are allowed"


def test_parse_length_refuses():
    """Zero, reversed ranges, more than two parts, non-integers, a missing end: ArgumentTypeError showing the text."""
    g = rng()
    a = g.randint(2, 300)
    b = a + g.randint(1, 300)
    for text in ["", "abc", "a-b", "0", "0-4", f"0-{b}", f"{b}-{a}", "5-2", "1-2-3", f"{a}-{b}-{b}", "1.5",
                 "2.0", f"{a}.0", f"{a}-{b}.0", f"{a}.5", f"{a}-{b}.5", "-3", f"-{a}", "8-", f"{a}-", " "]:
        check_refused(text)


def test_parse_length_error_is_for_argparse():
    """The error is argparse's: an option whose value is refused is a usage error naming the option."""
    p = argparse.ArgumentParser(prog="bench", exit_on_error=False)
    p.add_argument("--input-len", type=bench.parse_length)
    try:
        p.parse_args(["--input-len", "7-3"])
        raised = ""
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001
        raised = f"{type(e).__name__}: {e}"
    assert raised.startswith("ArgumentError: argument --input-len"), \
        "argparse reports an ArgumentTypeError as a usage error of the option"
    assert "'7-3'" in raised, "and shows the value"


# ------------------------------------------------------------------------------------------- arrival_times

def test_arrivals_exact():
    """Random rates and seeds: times[0] == 0.0 and times[i + 1] == times[i] + the (i + 1)-th expovariate(rate)."""
    g = rng()
    for n in (0, 1, 2, g.randint(3, 60)):
        rate = round(g.uniform(0.3, 50.0), 3)
        seed = g.randrange(10**6)
        got = bench.arrival_times(n, rate, random.Random(seed))
        assert got == model_arrivals(n, rate, seed), f"arrival_times({n}, {rate}, Random({seed}))"


def test_arrivals_burst():
    """An infinite rate: n times, all 0.0."""
    g = rng()
    n = g.randint(3, 40)
    got = bench.arrival_times(n, math.inf, random.Random(g.randrange(1000)))
    assert got == [0.0] * n, f"rate inf: {n} arrivals, all at 0.0"
    assert {type(t).__name__ for t in got} == {"float"}, "rate inf: the times are floats (0.0, not 0)"
    got = bench.arrival_times(0, math.inf, random.Random(0))
    assert got == [], "no requests, no arrivals"


def test_arrivals_mean_gap_is_one_over_rate():
    """20000 arrivals: the mean gap is 1 / rate (requests per second), within 5 %."""
    g = rng()
    rate = round(g.uniform(0.5, 20.0), 2)
    times = bench.arrival_times(20000, rate, random.Random(g.randrange(10**6)))
    gaps = [b - a for a, b in zip(times, times[1:])]
    ratio = (sum(gaps) / len(gaps)) * rate
    assert 0.95 < ratio < 1.05, f"rate {rate}/s: mean gap x rate should be about 1 (the gap's mean is 1 / rate)"
    assert min(gaps) >= 0, "arrival times never go back"
    assert len(set(round(x, 12) for x in gaps[:50])) > 40, "the gaps are random (exponential), not all equal"


# ------------------------------------------------------------------------------------------- make_workload

def test_workload_matches_engine():
    """Random sizes, lengths, rates and seeds: the same requests as the engine's make_workload."""
    g = rng()
    for _ in range(3):
        n = g.randint(1, 25)
        lo = g.randint(1, 30)
        input_len = Length(lo, lo + g.randint(1, 60))
        out_lo = g.randint(1, 20)
        output_len = Length(out_lo, out_lo + g.randint(1, 40))
        rate = g.choice([math.inf, round(g.uniform(0.5, 30.0), 2)])
        seed = g.randrange(10**6)
        items = bench.make_workload(n, input_len, output_len, rate, seed)
        kinds = {(type(w).__name__, type(w[3]).__name__) for w in items}
        assert kinds == {("WorkItem", "float")}, "(the type of each item, of its arrival time): one WorkItem each"
        got = workload(n, input_len, output_len, rate, seed)
        want = expected(lambda: workload(n, input_len, output_len, rate, seed))  # noqa: B023
        assert got == want, f"make_workload({n}, {input_len}, {output_len}, rate={rate}, seed={seed})"


def test_workload_parts():
    """Input lengths from the "input" generator, output lengths from "output", arrivals from "arrival", each
    drawn in request order (checked here with the generators of the statement)."""
    g = rng()
    n = g.randint(5, 30)
    seed = g.randrange(10**6)
    input_len = Length(2, g.randint(20, 80))
    output_len = Length(1, g.randint(20, 80))
    rate = round(g.uniform(0.5, 10.0), 2)
    got = workload(n, input_len, output_len, rate, seed)

    def gen(part):
        return random.Random(f"minisgl-bench:{seed}:{part}")

    gi, go = gen("input"), gen("output")
    assert [w[1] for w in got] == [input_len.draw(gi) for _ in range(n)], \
        "input_len of request i: the (i + 1)-th input_len.draw of Random('minisgl-bench:<seed>:input')"
    assert [w[2] for w in got] == [output_len.draw(go) for _ in range(n)], \
        "output_len of request i: the (i + 1)-th output_len.draw of Random('minisgl-bench:<seed>:output')"
    assert [w[3] for w in got] == model_arrivals(n, rate, f"minisgl-bench:{seed}:arrival"), \
        "arrival_s: arrival_times(n, rate, Random('minisgl-bench:<seed>:arrival'))"
    assert [len(w[0].split()) for w in got] == [w[1] for w in got], "each prompt has input_len words"


def test_workload_each_argument_moves_only_its_part():
    """A new rate moves only the arrivals; new output lengths only the outputs; new input lengths leave the
    outputs and arrivals; a new seed gives other prompts."""
    g = rng()
    n = g.randint(8, 24)
    seed = g.randrange(10**6)
    base = workload(n, Length(3, 40), Length(2, 30), 4.0, seed)
    burst = workload(n, Length(3, 40), Length(2, 30), math.inf, seed)
    assert [w[:3] for w in burst] == [w[:3] for w in base], "another rate: the same prompts and lengths"
    assert [w[3] for w in burst] == [0.0] * n, "rate inf: every arrival at 0.0"
    longer = workload(n, Length(3, 40), Length(50, 90), 4.0, seed)
    assert [(w[0], w[1], w[3]) for w in longer] == [(w[0], w[1], w[3]) for w in base], \
        "other output lengths: the same prompts, input lengths and arrivals"
    other_in = workload(n, Length(41, 60), Length(2, 30), 4.0, seed)
    assert [(w[2], w[3]) for w in other_in] == [(w[2], w[3]) for w in base], \
        "other input lengths: the same output lengths and arrivals"
    again = workload(n, Length(3, 40), Length(2, 30), 4.0, seed)
    assert again == base, "the same arguments: the same workload"
    other_seed = workload(n, Length(3, 40), Length(2, 30), 4.0, seed + 1)
    assert [w[0] for w in other_seed] != [w[0] for w in base], "another seed: other prompts"


def test_workload_int_lengths_are_fixed():
    """An int length n is Length(n, n)."""
    g = rng()
    n_in, n_out = g.randint(2, 40), g.randint(2, 40)
    got = workload(6, n_in, n_out, 3.0, g.randrange(1000))
    assert [(w[1], w[2]) for w in got] == [(n_in, n_out)] * 6, f"input_len {n_in}, output_len {n_out}: fixed"
    assert [len(w[0].split()) for w in got] == [n_in] * 6, f"prompts of {n_in} words"


def test_workload_tokenizer():
    """A tokenizer given is the one the prompts are cut for (here one character per token); none means words."""
    g = rng()
    seed = g.randrange(1000)
    got = workload(5, Length(5, 60), 4, math.inf, seed, CharTokenizer())
    assert [len(w[0]) for w in got] == [w[1] for w in got], "with a character tokenizer: input_len characters"
    want = expected(lambda: workload(5, Length(5, 60), 4, math.inf, seed, CharTokenizer()))
    assert got == want, "the engine's workload for that tokenizer"
    words = workload(5, Length(5, 60), 4, math.inf, seed)
    assert words == workload(5, Length(5, 60), 4, math.inf, seed, bench.WordTokenizer()), \
        "no tokenizer means WordTokenizer()"


def test_workload_defaults():
    """The defaults: rate inf (every arrival at 0.0) and seed 0, the engine's workload."""
    g = rng()
    n = g.randint(3, 12)
    got = workload(n, Length(2, 30), Length(1, 20))
    assert [w[3] for w in got] == [0.0] * n, "rate inf by default: every arrival at 0.0"
    assert got == expected(lambda: workload(n, Length(2, 30), Length(1, 20), math.inf, 0)), \
        "seed 0 by default: the engine's make_workload(n, ..., rate=inf, seed=0)"

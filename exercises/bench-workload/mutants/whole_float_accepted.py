"""parse_length, "every number is an integer": a whole float such as "2.0" is read as 2 instead of refused."""

from __future__ import annotations

import argparse
import math
import random

from minisgl.benchmark import Length, WordTokenizer, WorkItem, make_prompts


def parse_length(text: str) -> Length:
    """`N` (fixed) or `A-B` (uniform integers, inclusive), all >= 1; an argparse type."""
    parts = text.strip().split("-")
    try:
        if len(parts) not in (1, 2):
            raise ValueError
        lo, hi = (int(float(p)) if float(p).is_integer() else int(p) for p in (parts[0], parts[-1]))
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid length {text!r}: expected N or A-B (integers)") from None
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError(f"invalid length {text!r}: expected 1 <= N, or 1 <= A <= B")
    return Length(lo, hi)


def arrival_times(n: int, rate: float, rng: random.Random) -> list[float]:
    """Poisson arrivals: the first at 0, then exponential gaps of mean 1/rate; all 0 for an infinite rate."""
    if math.isinf(rate):
        return [0.0] * n
    times, t = [], 0.0
    for _ in range(n):
        times.append(t)
        t += rng.expovariate(rate)
    return times


def make_workload(num_requests: int, input_len: Length | int, output_len: Length | int, rate: float = math.inf,
                  seed: int = 0, tokenizer: Tokenizer | None = None) -> list[WorkItem]:
    """The requests of a run: (prompt, input_len, output_len, arrival_s), the same for the same arguments.
    Input lengths, output lengths, prompt places and arrivals each have their own generator derived from
    the seed, so that changing the rate does not change the prompts, for example. An int length is fixed."""
    tok = tokenizer if tokenizer is not None else WordTokenizer()
    input_len = Length(input_len, input_len) if isinstance(input_len, int) else input_len
    output_len = Length(output_len, output_len) if isinstance(output_len, int) else output_len
    rngs = {part: random.Random(f"minisgl-bench:{seed}:{part}") for part in ("input", "output", "prompt", "arrival")}
    inputs = [input_len.draw(rngs["input"]) for _ in range(num_requests)]
    outputs = [output_len.draw(rngs["output"]) for _ in range(num_requests)]
    prompts = make_prompts(inputs, tok, rngs["prompt"])
    arrivals = arrival_times(num_requests, rate, rngs["arrival"])
    return [WorkItem(*item) for item in zip(prompts, inputs, outputs, arrivals)]

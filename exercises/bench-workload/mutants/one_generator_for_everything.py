"""make_workload draws every part from one random.Random(seed): longer outputs move the prompts and arrivals."""

import argparse
import math
import random

from minisgl.benchmark import Length, WordTokenizer, WorkItem, make_prompts


def parse_length(text):
    parts = text.strip().split("-")
    try:
        if len(parts) not in (1, 2):
            raise ValueError
        lo, hi = int(parts[0]), int(parts[-1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid length {text!r}: expected N or A-B (integers)") from None
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError(f"invalid length {text!r}: expected 1 <= N, or 1 <= A <= B")
    return Length(lo, hi)


def arrival_times(n, rate, rng):
    if math.isinf(rate):
        return [0.0] * n
    times, t = [], 0.0
    for _ in range(n):
        times.append(t)
        t += rng.expovariate(rate)
    return times


def make_workload(num_requests, input_len, output_len, rate=math.inf, seed=0, tokenizer=None):
    tok = tokenizer if tokenizer is not None else WordTokenizer()
    input_len = Length(input_len, input_len) if isinstance(input_len, int) else input_len
    output_len = Length(output_len, output_len) if isinstance(output_len, int) else output_len
    shared = random.Random(f"minisgl-bench:{seed}")
    rngs = {part: shared for part in ("input", "output", "prompt", "arrival")}
    inputs = [input_len.draw(rngs["input"]) for _ in range(num_requests)]
    outputs = [output_len.draw(rngs["output"]) for _ in range(num_requests)]
    prompts = make_prompts(inputs, tok, rngs["prompt"])
    arrivals = arrival_times(num_requests, rate, rngs["arrival"])
    return [WorkItem(*item) for item in zip(prompts, inputs, outputs, arrivals)]

"""A correct solution written differently: str.partition and isdecimal for the lengths, itertools.accumulate for
the arrivals, and the generators made one by one."""

import argparse
import itertools
import math
import random

from minisgl.benchmark import Length, WordTokenizer, WorkItem, make_prompts


def parse_length(text):
    first, dash, second = text.strip().partition("-")
    if not first.isdecimal() or (dash and not second.isdecimal()):
        raise argparse.ArgumentTypeError(f"bad length {text!r} (want N or A-B)")
    lo = int(first)
    hi = int(second) if dash else lo
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"bad length {text!r} (want 1 <= A <= B)")
    return Length(lo, hi)


def arrival_times(n, rate, rng):
    if n == 0:
        return []
    if rate == math.inf:
        return [0.0 for _ in range(n)]
    gaps = [rng.expovariate(rate) for _ in range(n - 1)]
    return list(itertools.accumulate(gaps, initial=0.0))


def _fixed(length):
    return Length(length, length) if isinstance(length, int) else length


def make_workload(num_requests, input_len, output_len, rate=math.inf, seed=0, tokenizer=None):
    def gen(part):
        return random.Random(f"minisgl-bench:{seed}:{part}")

    input_len, output_len = _fixed(input_len), _fixed(output_len)
    g_in, g_out = gen("input"), gen("output")
    inputs, outputs = [], []
    for _ in range(num_requests):
        inputs.append(input_len.draw(g_in))
        outputs.append(output_len.draw(g_out))
    prompts = make_prompts(inputs, WordTokenizer() if tokenizer is None else tokenizer, gen("prompt"))
    arrivals = arrival_times(num_requests, rate, gen("arrival"))
    return [WorkItem(p, i, o, a) for p, i, o, a in zip(prompts, inputs, outputs, arrivals)]

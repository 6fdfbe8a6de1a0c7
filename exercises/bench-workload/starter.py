"""Exercise bench-workload: parse_length, arrival_times and make_workload.

Your code runs as if written in minisgl/benchmark.py: its globals are there (argparse, math, random, Length,
WorkItem, WordTokenizer, make_prompts, and your arrival_times).
"""

from __future__ import annotations

import argparse
import math
import random

from minisgl.benchmark import Length, WordTokenizer, WorkItem, make_prompts


def parse_length(text: str) -> Length:
    """`N` (fixed) or `A-B` (uniform integers, inclusive), all >= 1, as a Length; anything else raises
    argparse.ArgumentTypeError whose message shows repr(text)."""
    raise NotImplementedError("write parse_length")


def arrival_times(n: int, rate: float, rng: random.Random) -> list[float]:
    """n Poisson arrival times: the first at 0.0, then gaps rng.expovariate(rate); all 0.0 when rate is infinite."""
    raise NotImplementedError("write arrival_times")


def make_workload(num_requests: int, input_len: Length | int, output_len: Length | int, rate: float = math.inf,
                  seed: int = 0, tokenizer=None) -> list[WorkItem]:
    """The requests of a run, the same for the same arguments: one generator per part (input, output, prompt,
    arrival), each random.Random(f"minisgl-bench:{seed}:{part}")."""
    raise NotImplementedError("write make_workload")

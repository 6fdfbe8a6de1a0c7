"""Rule 2, "a Mixture-of-Experts model (num_experts > 0)": the test is num_experts > 1, so a model with one expert is split."""

from __future__ import annotations

from typing import Any

# Reference solution: the engine's own code, taken from minisgl/distributed/shard.py.

def check_tp_size(c: ModelConfig, size: int) -> None:
    """Refuse a tensor-parallel size the model cannot be split by, naming both numbers."""
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"tp_size must be a positive integer, got {size!r}")
    if size > 1 and c.num_experts > 1:
        raise ValueError(f"tensor parallelism of a Mixture-of-Experts model ({c.num_experts} experts) is not "
                         "supported yet: run it with tp_size 1")
    what = [("attention heads", c.num_heads), ("MLP intermediate size", c.intermediate_size),
            ("vocabulary size", c.vocab_size)]
    for name, n in what:
        if n % size:
            raise ValueError(f"tp_size {size} does not divide the model's {name}, {n}: each rank keeps an equal "
                             f"share (try a divisor of {n})")
    kv = c.num_kv_heads
    if size > kv and size % kv:
        raise ValueError(f"tp_size {size} is neither a divisor nor a multiple of the model's {kv} K/V heads: "
                         f"each rank keeps whole K/V heads, or one replicated on tp_size/{kv} ranks")
    if size <= kv and kv % size:
        raise ValueError(f"tp_size {size} does not divide the model's {kv} K/V heads")


def kv_head_range(num_kv_heads: int, tp: TPInfo) -> tuple[int, int]:
    """(first K/V head, count) that rank ``tp.rank`` keeps."""
    if tp.size <= num_kv_heads:
        per = num_kv_heads // tp.size
        return tp.rank * per, per
    return tp.rank // (tp.size // num_kv_heads), 1  # replicated on size // num_kv_heads ranks

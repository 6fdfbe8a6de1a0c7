"""Exercise tp-heads: check_tp_size and kv_head_range.

Your code runs as if written in minisgl/distributed/shard.py (its imports are available: ModelConfig for the model's
shape, TPInfo for a rank's place).
"""

from __future__ import annotations

from typing import Any


def check_tp_size(c: Any, size: int) -> None:
    """Raise ValueError, naming both numbers, when the model ``c`` (a ModelConfig) cannot be split over ``size``
    ranks; return None when it can."""
    raise NotImplementedError("write check_tp_size")


def kv_head_range(num_kv_heads: int, tp: Any) -> tuple[int, int]:
    """(first K/V head, count) that rank ``tp.rank`` of ``tp.size`` keeps."""
    raise NotImplementedError("write kv_head_range")

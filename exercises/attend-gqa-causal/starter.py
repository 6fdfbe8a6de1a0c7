"""Exercise attend-gqa-causal: attend, causal GQA attention for one request.

Your code runs as if written in minisgl/attention/utils.py (torch and torch.nn.functional as F are imported).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: F401


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """q [n, Hq, D] are the last n of the L positions of k/v [L, Hkv, D]. Query i (position L - n + i) attends keys
    0 .. L - n + i; query head h uses KV head h // (Hq // Hkv). Returns [n, Hq, D]."""
    raise NotImplementedError("write attend")

"""Exercise moe-route: the router of a Mixture of Experts, route().

Your code runs as if written in minisgl/moe/route.py (torch is imported there).
"""

from __future__ import annotations

import torch


def route(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights [T, k] in the logits' dtype, expert ids [T, k] int64): a softmax over every expert in float32, the
    k largest (largest first), divided by their sum when ``renormalize``; the weights cast back at the end."""
    raise NotImplementedError("write route")

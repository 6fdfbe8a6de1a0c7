"""Rule 1, the softmax over every expert: a hand-written softmax exp(x) / sum(exp(x)) in float32 without subtracting the row maximum, so logits above ~88 overflow to inf and give NaN weights."""

from __future__ import annotations

import torch

# Reference solution: the engine's own code, taken from minisgl/moe/route.py.

def route(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights [T, k] in the logits' dtype, expert ids [T, k] int64): a softmax over every expert in float32, the
    k largest, renormalised to sum to 1 when the config says so (norm_topk_prob)."""
    e = torch.exp(router_logits.float())
    probs = e / e.sum(dim=-1, keepdim=True)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

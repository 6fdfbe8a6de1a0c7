"""Rule 1, a softmax of each token: a hand-written softmax subtracts the maximum of the whole tensor, not of each row, so a row far below it underflows to 0/0 = NaN."""

from __future__ import annotations

import torch

# Reference solution: the engine's own code, taken from minisgl/moe/route.py.

def route(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights [T, k] in the logits' dtype, expert ids [T, k] int64): a softmax over every expert in float32, the
    k largest, renormalised to sum to 1 when the config says so (norm_topk_prob)."""
    x = router_logits.float() - router_logits.float().max()
    e = torch.exp(x)
    probs = e / e.sum(dim=-1, keepdim=True)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

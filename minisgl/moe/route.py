"""The router: which k experts each token goes to, and with what weights (Hugging Face's Qwen3-MoE rule)."""

from __future__ import annotations

import torch


def route(router_logits: torch.Tensor, top_k: int, renormalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights [T, k] in the logits' dtype, expert ids [T, k] int64): a softmax over every expert in float32, the
    k largest, renormalised to sum to 1 when the config says so (norm_topk_prob)."""
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

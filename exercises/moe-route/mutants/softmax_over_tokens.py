"""Rule 1, "over every expert (the last dimension)": the softmax runs over the tokens (dim 0) instead."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=0, dtype=torch.float32)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

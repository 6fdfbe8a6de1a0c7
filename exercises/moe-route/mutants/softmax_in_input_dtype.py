"""Rule 1, "computed in float32": the softmax and the renormalisation run in the logits' own dtype (bfloat16 rounds
the probabilities, then the quotients)."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids

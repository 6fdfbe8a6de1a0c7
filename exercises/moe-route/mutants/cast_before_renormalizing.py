"""Rule 4, "cast back once, at the end ... after the renormalisation": the top-k probabilities are cast to the logits'
dtype first, then renormalised in that dtype."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    weights = weights.to(router_logits.dtype)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, ids

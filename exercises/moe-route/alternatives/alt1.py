"""A correct route written differently: a softmax by hand (out of place) in float32, a descending sort, gather."""

import torch


def route(router_logits, top_k, renormalize):
    x = router_logits.to(torch.float32)
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    probs = e / e.sum(dim=-1, keepdim=True)
    order = torch.argsort(probs, dim=-1, descending=True)
    ids = order[:, :top_k]
    weights = probs.gather(-1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

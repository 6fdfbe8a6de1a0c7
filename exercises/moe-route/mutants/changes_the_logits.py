""""router_logits is left as it was": a softmax by hand that subtracts the row maximum in place (.float() of float32
logits is the same tensor, so the caller's logits change)."""

import torch


def route(router_logits, top_k, renormalize):
    x = router_logits.float()
    x -= x.max(dim=-1, keepdim=True).values
    e = x.exp()
    probs = e / e.sum(dim=-1, keepdim=True)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

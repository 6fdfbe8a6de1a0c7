"""A correct route using an identity: the top-k of a softmax are the top-k logits, and the renormalised weights are a
softmax over those k logits alone (in float32)."""

import torch


def route(router_logits, top_k, renormalize):
    x = router_logits.float()
    top, ids = x.topk(top_k, dim=-1)
    if renormalize:
        weights = torch.softmax(top, dim=-1)
    else:
        weights = torch.exp(top - torch.logsumexp(x, dim=-1, keepdim=True))
    return weights.to(router_logits.dtype), ids

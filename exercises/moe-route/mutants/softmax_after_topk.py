"""Rule 1, "the softmax comes first": top-k on the logits, then a softmax over the k chosen only (the weights always
sum to 1, as if renormalised)."""

import torch


def route(router_logits, top_k, renormalize):
    logits, ids = torch.topk(router_logits.float(), top_k, dim=-1)
    weights = torch.softmax(logits, dim=-1)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

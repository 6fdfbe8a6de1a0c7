"""Rule 3, "the k weights of a row are divided by their sum, in float32": they are multiplied by the reciprocal of
the sum, which is 1 ulp off on some rows (a single expert's weight 0.99999994, not 1.0)."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        weights = weights * (1.0 / weights.sum(dim=-1, keepdim=True))
    return weights.to(router_logits.dtype), ids

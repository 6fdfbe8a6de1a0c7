"""Rule 2, "the k ids of a row are different experts" with ties: k rounds of argmax, each masking the best *value*,
so every expert tied with it is dropped too and a less probable one (or a repeat) takes its place."""

import torch


def route(router_logits, top_k, renormalize):
    probs = torch.softmax(router_logits, dim=-1, dtype=torch.float32)
    rest = probs.clone()
    picks = []
    for _ in range(top_k):
        best = rest.argmax(dim=-1, keepdim=True)
        picks.append(best)
        rest = rest.masked_fill(rest == rest.gather(-1, best), -1.0)
    ids = torch.cat(picks, dim=-1)
    weights = probs.gather(-1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(router_logits.dtype), ids

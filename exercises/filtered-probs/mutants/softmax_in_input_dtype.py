"""dtype, "softmax(logits / temperature) (computed in float32)": softmax runs in the logits' own dtype and only the result is cast to float32 (float16 logits lose precision)."""

import torch


def filtered_probs(logits, params):
    probs = torch.softmax(logits / params.temperature, dim=-1).float()
    if 0 < params.top_k < probs.shape[-1]:
        top = torch.topk(probs, params.top_k)
        probs = torch.zeros_like(probs).scatter_(-1, top.indices, top.values)
    if params.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        before = torch.cumsum(sorted_p, dim=-1) - sorted_p
        keep = before < params.top_p * sorted_p.sum()
        sorted_p = sorted_p * keep
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    return probs / probs.sum()

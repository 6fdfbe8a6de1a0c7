"""Temperature, "softmax(logits / temperature)": the temperature is clamped to at least 0.1, so colder temperatures
(0.05) give a flatter distribution than promised."""

import torch


def filtered_probs(logits, params):
    probs = torch.softmax(logits.float() / max(params.temperature, 0.1), dim=-1)
    if params.top_k > 0 and params.top_k < probs.shape[-1]:
        top = torch.topk(probs, params.top_k)
        probs = torch.zeros_like(probs).scatter_(-1, top.indices, top.values)
    if params.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        before = torch.cumsum(sorted_p, dim=-1) - sorted_p
        keep = before < params.top_p * sorted_p.sum()
        sorted_p = sorted_p * keep
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    return probs / probs.sum()

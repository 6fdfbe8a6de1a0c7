"""Sampling: greedy, or temperature with top-k and top-p, each request with its own (seedable) generator."""

from __future__ import annotations

import torch

from minisgl.core import SamplingParams


def filtered_probs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """The distribution sampled from: softmax(logits / T), cut to the top-k, then to the smallest top-p nucleus."""
    probs = torch.softmax(logits.float() / params.temperature, dim=-1)
    if params.top_k > 0 and params.top_k < probs.shape[-1]:
        top = torch.topk(probs, params.top_k)
        probs = torch.zeros_like(probs).scatter_(-1, top.indices, top.values)
    if params.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # mass of the tokens ranked above each one
        keep = before < params.top_p * sorted_p.sum()  # the smallest prefix whose mass reaches top_p
        sorted_p = sorted_p * keep
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    return probs / probs.sum()


class Sampler:
    def __init__(self, device: torch.device) -> None:
        self.device = device

    def sample(self, logits: torch.Tensor, params: list[SamplingParams],
               generators: list[torch.Generator | None]) -> torch.Tensor:
        """logits: [bs, vocab] float32 -> next token ids [bs] int32."""
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0].to(torch.int32)
        return out

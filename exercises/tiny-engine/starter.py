"""Exercise tiny-engine: TinyEngine.attention and TinyEngine.generate.

Your code runs as if written in minisgl/tiny_engine.py (torch is there). The class is the engine's: write the two
methods inside this stub. Already there: self.w (the weights by name), self.heads, self.kv_heads, self.head_dim,
self.max_len, self.eos (a set of token ids), the cache self.k and self.v ([layers, max_len, kv_heads, head_dim]),
self.qkv(i, x, start) and self.forward(ids, start).
"""

from __future__ import annotations

import torch


class TinyEngine:
    def attention(self, i: int, x: torch.Tensor, start: int) -> torch.Tensor:
        """Layer i's attention for x [T, hidden], the tokens at positions start.. start+T-1 (the positions before
        them are in the cache already): write their K/V at rows start.. start+T-1 of layer i's cache, attend
        each query over every position up to its own (GQA: query head h reads K/V head h // (heads // kv_heads);
        scores scaled by 1/sqrt(head_dim)), and return o_proj of the heads' outputs: [T, hidden]."""
        raise NotImplementedError("write attention")

    def generate(self, prompt: list[int], max_new_tokens: int, stop_at_eos: bool = True) -> list[int]:
        """Greedy: the prompt in one forward at position 0 (prefill), then each new token alone at its own position
        (decode), until max_new_tokens tokens or, with stop_at_eos, an EOS id (returned too). ValueError, before
        any forward, for an empty prompt, max_new_tokens < 1, or len(prompt) + max_new_tokens > self.max_len."""
        raise NotImplementedError("write generate")

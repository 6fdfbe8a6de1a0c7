"""A correct attention written differently: one query head at a time, plain matmuls, an additive -inf mask from
triu with the diagonal offset by start; generate tracks the position explicitly."""

import math

import torch


class TinyEngine:
    def attention(self, i, x, start):
        q, k, v = self.qkv(i, x, start)
        t = len(x)
        end = start + t
        self.k[i, start:end].copy_(k)
        self.v[i, start:end].copy_(v)
        mask = torch.full((t, end), float("-inf")).triu(start + 1)  # query a sees keys 0..start+a
        heads = []
        for h in range(self.heads):
            kv = h * self.kv_heads // self.heads
            scores = q[:, h] @ self.k[i, :end, kv].T / math.sqrt(self.head_dim) + mask
            heads.append(torch.softmax(scores, dim=-1) @ self.v[i, :end, kv])
        return torch.cat(heads, dim=-1) @ self.w[f"model.layers.{i}.self_attn.o_proj.weight"].T

    def generate(self, prompt, max_new_tokens, stop_at_eos=True):
        if not (1 <= len(prompt) and 1 <= max_new_tokens and len(prompt) + max_new_tokens <= self.max_len):
            raise ValueError(f"prompt {len(prompt)}, max_new_tokens {max_new_tokens}, max_len {self.max_len}")
        logits, pos, out = self.forward(prompt, 0), len(prompt), []
        while True:
            out.append(int(logits.argmax()))
            if len(out) >= max_new_tokens or (stop_at_eos and out[-1] in self.eos):
                return out
            logits = self.forward([out[-1]], pos)
            pos += 1

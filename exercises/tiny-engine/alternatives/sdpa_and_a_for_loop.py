"""A correct solution written differently: F.scaled_dot_product_attention with an explicit boolean mask (True:
may attend), K/V heads grouped with expand + reshape; generate as a for loop over the new tokens."""

import torch
import torch.nn.functional as F


class TinyEngine:
    def attention(self, i, x, start):
        q, k, v = self.qkv(i, x, start)
        t = x.shape[0]
        end = start + t
        self.k[i][start:end] = k
        self.v[i][start:end] = v
        group = self.heads // self.kv_heads
        cached_k, cached_v = self.k[i, :end], self.v[i, :end]  # [end, kv_heads, D]
        keys = cached_k[:, :, None, :].expand(end, self.kv_heads, group, self.head_dim).reshape(end, self.heads, -1)
        values = cached_v[:, :, None, :].expand(end, self.kv_heads, group, self.head_dim).reshape(end, self.heads, -1)
        positions = torch.arange(start, end)
        allowed = torch.arange(end)[None, :] <= positions[:, None]  # [T, end]
        out = F.scaled_dot_product_attention(q.transpose(0, 1), keys.transpose(0, 1), values.transpose(0, 1),
                                             attn_mask=allowed)  # [heads, T, D]
        out = out.transpose(0, 1).reshape(t, -1)
        return F.linear(out, self.w[f"model.layers.{i}.self_attn.o_proj.weight"])

    def generate(self, prompt, max_new_tokens, stop_at_eos=True):
        if max_new_tokens <= 0 or len(prompt) == 0:
            raise ValueError("need a prompt and at least one new token")
        if len(prompt) + max_new_tokens > self.max_len:
            raise ValueError(f"{len(prompt)} + {max_new_tokens} tokens do not fit in {self.max_len}")
        with torch.no_grad():
            tokens = []
            logits = self.forward(list(prompt), 0)
            for step in range(max_new_tokens):
                token = int(torch.argmax(logits).item())
                tokens.append(token)
                if stop_at_eos and token in self.eos:
                    break
                if step + 1 < max_new_tokens:
                    logits = self.forward([token], len(prompt) + step)
            return tokens

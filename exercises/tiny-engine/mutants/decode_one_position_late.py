"""Each decode forward is given the position after its token's (len(prompt) + len(out)): RoPE and the cache row are one off."""

import torch


class TinyEngine:
    def attention(self, i, x, start):
        q, k, v = self.qkv(i, x, start)
        t, d, end = len(x), self.head_dim, start + len(x)
        self.k[i, start:end], self.v[i, start:end] = k, v
        keys = self.k[i, :end].repeat_interleave(self.heads // self.kv_heads, dim=1)
        values = self.v[i, :end].repeat_interleave(self.heads // self.kv_heads, dim=1)
        scores = torch.einsum("thd,shd->hts", q, keys) / d**0.5
        future = torch.arange(end)[None, :] > torch.arange(start, end)[:, None]
        probs = scores.masked_fill(future, float("-inf")).softmax(-1)
        out = torch.einsum("hts,shd->thd", probs, values).reshape(t, self.heads * d)
        return out @ self.w[f"model.layers.{i}.self_attn.o_proj.weight"].T

    def generate(self, prompt, max_new_tokens, stop_at_eos=True):
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if not prompt or len(prompt) + max_new_tokens > self.max_len:
            raise ValueError(f"a prompt of 1 to {self.max_len - max_new_tokens} tokens, got {len(prompt)}")
        out = []
        logits = self.forward(prompt, 0)
        while True:
            out.append(int(logits.argmax()))
            if len(out) == max_new_tokens or (stop_at_eos and out[-1] in self.eos):
                return out
            logits = self.forward(out[-1:], len(prompt) + len(out))

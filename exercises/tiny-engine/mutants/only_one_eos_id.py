"""Stop "right after a token that is in self.eos" (a set): only one of the EOS ids, min(self.eos), stops generation; the model's other EOS ids run on."""

import torch


class TinyEngine:
    def attention(self, i: int, x: torch.Tensor, start: int) -> torch.Tensor:
        """Layer i's attention for x [T, hidden] at positions start.. start+T-1 (the positions before are in the
        cache): their K/V go into the cache, each query attends to every position up to its own."""
        q, k, v = self.qkv(i, x, start)
        t, d, end = len(x), self.head_dim, start + len(x)
        self.k[i, start:end], self.v[i, start:end] = k, v
        keys = self.k[i, :end].repeat_interleave(self.heads // self.kv_heads, dim=1)  # GQA: a K/V head per group
        values = self.v[i, :end].repeat_interleave(self.heads // self.kv_heads, dim=1)
        scores = torch.einsum("thd,shd->hts", q, keys) / d**0.5
        # causal: the query at position start+a sees keys at positions <= start+a
        future = torch.arange(end)[None, :] > torch.arange(start, end)[:, None]
        probs = scores.masked_fill(future, float("-inf")).softmax(-1)
        out = torch.einsum("hts,shd->thd", probs, values).reshape(t, self.heads * d)
        return out @ self.w[f"model.layers.{i}.self_attn.o_proj.weight"].T

    def generate(self, prompt: list[int], max_new_tokens: int, stop_at_eos: bool = True) -> list[int]:
        """Greedy: the prompt in one forward (prefill), then one token per forward (decode), reusing the cache."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if not prompt or len(prompt) + max_new_tokens > self.max_len:
            raise ValueError(f"a prompt of 1 to {self.max_len - max_new_tokens} tokens, got {len(prompt)}")
        out: list[int] = []
        logits = self.forward(prompt, 0)
        while True:
            out.append(int(logits.argmax()))
            if len(out) == max_new_tokens or (stop_at_eos and out[-1] == min(self.eos)):
                return out  # no forward after the last token: nobody would read its logits
            logits = self.forward(out[-1:], len(prompt) + len(out) - 1)

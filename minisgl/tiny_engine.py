"""Chapter 0: a whole LLM engine in one file, before any of the rest.

One request at a time, a contiguous KV cache, greedy decoding, a Llama or Qwen3 checkpoint read straight from its
safetensors. Its tokens equal Hugging Face transformers' (tests/test_tiny_engine.py). Everything the rest of the
course builds replaces one of its parts:

- the weights as a dict of tensors        -> layers/ and models/ (ops holding their weights, q/k/v merged)
- one contiguous K/V buffer per request   -> kvcache/ (a paged pool shared by every request, a radix prefix cache)
- attention by a full matrix product      -> attention/ (paged backends, FlashInfer)
- one request, prefill then decode        -> scheduler/ (many requests, batches, chunked prefill, overlap)
- argmax                                  -> engine/sample.py (temperature, top-k, top-p, seeds)
- a Python loop per token                 -> engine/graph.py (CUDA graphs), server/ (many clients)

    python -m minisgl.tiny_engine models/SmolLM2-135M-Instruct 1 504 3458 282   # prompt token ids
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


class TinyEngine:
    def __init__(self, model_path: str | Path, max_len: int = 1024) -> None:
        from safetensors.torch import load_file

        folder = Path(model_path)
        c = json.loads((folder / "config.json").read_text())
        arch = (c.get("architectures") or ["?"])[0]
        if arch not in ("LlamaForCausalLM", "Qwen3ForCausalLM"):
            raise ValueError(f"{folder}: {arch} is not a Llama or Qwen3 checkpoint")
        rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
        if rope.get("rope_type", "default") != "default":
            raise ValueError(f"{folder}: rope type {rope['rope_type']!r}: the tiny engine knows plain RoPE only")
        self.layers, self.heads, self.kv_heads = c["num_hidden_layers"], c["num_attention_heads"], \
            c["num_key_value_heads"]
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.heads
        self.eps, self.qk_norm = c["rms_norm_eps"], arch == "Qwen3ForCausalLM"
        self.eos = set(c["eos_token_id"] if isinstance(c.get("eos_token_id"), list) else [c.get("eos_token_id")])
        self.w: dict[str, torch.Tensor] = {}
        for file in sorted(folder.glob("*.safetensors")):
            self.w.update({k: v.float() for k, v in load_file(file).items()})
        if "lm_head.weight" not in self.w:  # tied: the LM head is the embedding
            self.w["lm_head.weight"] = self.w["model.embed_tokens.weight"]
        theta = rope.get("rope_theta", c.get("rope_theta", 10000.0))
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float() / self.head_dim))
        angles = torch.arange(max_len, dtype=torch.int64).float()[:, None] * inv_freq[None, :]
        self.cos, self.sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
        self.max_len = max_len
        # the KV cache: one contiguous buffer per layer for the one request, position p at row p
        self.k = torch.zeros(self.layers, max_len, self.kv_heads, self.head_dim)
        self.v = torch.zeros(self.layers, max_len, self.kv_heads, self.head_dim)

    def rms_norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rope(self, x: torch.Tensor, start: int) -> torch.Tensor:
        """x: [T, heads, D] at positions start.. start+T-1, rotated half against half."""
        cos, sin = self.cos[start:start + len(x), None], self.sin[start:start + len(x), None]
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin

    def qkv(self, i: int, x: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Layer i's q [T, heads, D], k and v [T, kv_heads, D] for x [T, hidden] at positions start.. start+T-1:
        projected, Qwen3's per-head norms, RoPE on q and k."""
        w, p, t, d = self.w, f"model.layers.{i}.self_attn.", len(x), self.head_dim
        q = (x @ w[p + "q_proj.weight"].T).view(t, self.heads, d)
        k = (x @ w[p + "k_proj.weight"].T).view(t, self.kv_heads, d)
        v = (x @ w[p + "v_proj.weight"].T).view(t, self.kv_heads, d)
        if self.qk_norm:  # Qwen3: an RMSNorm over each head's vector
            q, k = self.rms_norm(q, w[p + "q_norm.weight"]), self.rms_norm(k, w[p + "k_norm.weight"])
        return self.rope(q, start), self.rope(k, start), v

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

    def mlp(self, i: int, x: torch.Tensor) -> torch.Tensor:
        w, p = self.w, f"model.layers.{i}.mlp."
        gate, up = x @ w[p + "gate_proj.weight"].T, x @ w[p + "up_proj.weight"].T
        return (torch.nn.functional.silu(gate) * up) @ w[p + "down_proj.weight"].T

    @torch.inference_mode()
    def forward(self, ids: list[int], start: int) -> torch.Tensor:
        """The logits after the last of ``ids``, which sit at positions start.. of the request."""
        x = self.w["model.embed_tokens.weight"][torch.tensor(ids)]
        for i in range(self.layers):
            p = f"model.layers.{i}."
            x = x + self.attention(i, self.rms_norm(x, self.w[p + "input_layernorm.weight"]), start)
            x = x + self.mlp(i, self.rms_norm(x, self.w[p + "post_attention_layernorm.weight"]))
        return self.rms_norm(x[-1], self.w["model.norm.weight"]) @ self.w["lm_head.weight"].T

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
            if len(out) == max_new_tokens or (stop_at_eos and out[-1] in self.eos):
                return out  # no forward after the last token: nobody would read its logits
            logits = self.forward(out[-1:], len(prompt) + len(out) - 1)


if __name__ == "__main__":
    engine = TinyEngine(sys.argv[1])
    print(engine.generate([int(t) for t in sys.argv[2:]], 16))

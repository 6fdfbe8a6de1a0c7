"""The dense decoder shared by Llama and Qwen3 (Qwen3 adds per-head q/k RMSNorm)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from minisgl.core import get_global_ctx
from minisgl.layers import (
    AttentionLayer,
    BaseOP,
    Linear,
    LMHead,
    OPList,
    RMSNorm,
    RotaryEmbedding,
    VocabEmbedding,
    silu_and_mul,
)
from minisgl.models.base import BaseLLMModel
from minisgl.models.config import ModelConfig


class SelfAttention(BaseOP):
    def __init__(self, c: ModelConfig, layer_id: int, rotary: RotaryEmbedding, qk_norm: bool,
                 dtype: torch.dtype, device: torch.device):
        q, kv = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
        self.qkv_proj = Linear(c.hidden_size, q + 2 * kv, c.attention_bias, dtype, device)
        self.o_proj = Linear(q, c.hidden_size, c.attention_bias, dtype, device)
        norms = (RMSNorm(c.head_dim, c.rms_norm_eps, dtype, device),
                 RMSNorm(c.head_dim, c.rms_norm_eps, dtype, device)) if qk_norm else (None, None)
        if qk_norm:
            self.q_norm, self.k_norm = norms
        self._attn = AttentionLayer(layer_id, c.num_heads, c.num_kv_heads, c.head_dim, rotary, *norms)

    def forward(self, x: torch.Tensor, cos_sin: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return self.o_proj.forward(self._attn.forward(self.qkv_proj.forward(x), cos_sin))


class MLP(BaseOP):
    def __init__(self, c: ModelConfig, dtype: torch.dtype, device: torch.device):
        self.gate_up_proj = Linear(c.hidden_size, 2 * c.intermediate_size, c.mlp_bias, dtype, device)
        self.down_proj = Linear(c.intermediate_size, c.hidden_size, c.mlp_bias, dtype, device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj.forward(silu_and_mul(self.gate_up_proj.forward(x)))


class DecoderLayer(BaseOP):
    def __init__(self, c: ModelConfig, layer_id: int, rotary: RotaryEmbedding, qk_norm: bool,
                 dtype: torch.dtype, device: torch.device, mlp: BaseOP):
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps, dtype, device)
        self.self_attn = SelfAttention(c, layer_id, rotary, qk_norm, dtype, device)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps, dtype, device)
        self.mlp = mlp

    def forward(self, x: torch.Tensor, cos_sin: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x = x + self.self_attn.forward(self.input_layernorm.forward(x), cos_sin)
        return x + self.mlp.forward(self.post_attention_layernorm.forward(x))


class DecoderModel(BaseOP):
    def __init__(self, c: ModelConfig, qk_norm: bool, dtype: torch.dtype, device: torch.device,
                 make_mlp: Callable[[int], BaseOP]):
        self.embed_tokens = VocabEmbedding(c.vocab_size, c.hidden_size, dtype, device)
        self._rotary = rotary = RotaryEmbedding(c.head_dim, c.max_position, c.rope_theta, c.rope_scaling, dtype, device)
        self.layers = OPList([DecoderLayer(c, i, rotary, qk_norm, dtype, device, make_mlp(i))
                              for i in range(c.num_layers)])
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps, dtype, device)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens.forward(input_ids)
        cos_sin = self._rotary.cos_sin(positions)
        for layer in self.layers:
            x = layer.forward(x, cos_sin)
        return self.norm.forward(x)


class DenseCausalLM(BaseLLMModel):
    QK_NORM = False

    def __init__(self, config: ModelConfig, dtype: torch.dtype, device: torch.device):
        super().__init__(config)
        self.model = DecoderModel(config, self.QK_NORM, dtype, device, lambda i: self.make_mlp(i, dtype, device))
        tied = self.model.embed_tokens if config.tie_word_embeddings else None
        self.lm_head = LMHead(config.vocab_size, config.hidden_size, dtype, device, tied=tied)

    def make_mlp(self, layer_id: int, dtype: torch.dtype, device: torch.device) -> BaseOP:
        return MLP(self.config, dtype, device)

    def forward(self) -> torch.Tensor:
        batch = get_global_ctx().batch
        return self.lm_head.forward(self.model.forward(batch.input_ids, batch.positions))

    def weight_parts(self) -> dict[str, tuple[str, int, int]]:
        c = self.config
        q, kv, inter = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
        parts: dict[str, tuple[str, int, int]] = {}
        for i in range(c.num_layers):
            attn, mlp = f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp"
            suffixes = ["weight", "bias"] if c.attention_bias else ["weight"]
            for s in suffixes:
                for name, start, rows in (("q", 0, q), ("k", q, kv), ("v", q + kv, kv)):
                    parts[f"{attn}.{name}_proj.{s}"] = (f"{attn}.qkv_proj.{s}", start, rows)
            for s in (["weight", "bias"] if c.mlp_bias else ["weight"]):
                parts[f"{mlp}.gate_proj.{s}"] = (f"{mlp}.gate_up_proj.{s}", 0, inter)
                parts[f"{mlp}.up_proj.{s}"] = (f"{mlp}.gate_up_proj.{s}", inter, inter)
        return parts

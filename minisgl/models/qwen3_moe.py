"""Qwen3-MoE: Qwen3's decoder with a Mixture of Experts in place of the MLP in its sparse layers (minisgl/moe)."""

from __future__ import annotations

import torch

from minisgl.layers import BaseOP, Linear
from minisgl.models.config import ModelConfig
from minisgl.models.dense import MLP
from minisgl.models.qwen3 import Qwen3ForCausalLM
from minisgl.moe import MOE_BACKENDS, route


class Experts(BaseOP):
    """Every expert's weights in two matrices: gate_up [E * 2I, H] (expert e's gate rows, then its up rows) and down
    [E * H, I]; flat, so that each checkpoint tensor is a block of rows (models/weight.py loads rows)."""

    def __init__(self, c: ModelConfig, dtype: torch.dtype, device: torch.device):
        e, i, h = c.num_experts, c.moe_intermediate_size, c.hidden_size
        self.gate_up = torch.empty(e * 2 * i, h, dtype=dtype, device=device)
        self.down = torch.empty(e * h, i, dtype=dtype, device=device)


class SparseMoE(BaseOP):
    def __init__(self, c: ModelConfig, dtype: torch.dtype, device: torch.device):
        self.gate = Linear(c.hidden_size, c.num_experts, False, dtype, device)  # the router
        self.experts = Experts(c, dtype, device)
        self._top_k, self._renormalize = c.num_experts_per_tok, c.norm_topk_prob
        self._backend = MOE_BACKENDS.get("torch")  # the engine sets its choice (EngineConfig.moe_backend)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, ids = route(self.gate.forward(x), self._top_k, self._renormalize)
        return self._backend(x, weights, ids, self.experts.gate_up, self.experts.down)


class Qwen3MoeForCausalLM(Qwen3ForCausalLM):
    def make_mlp(self, layer_id: int, dtype: torch.dtype, device: torch.device) -> BaseOP:
        c = self.config
        return SparseMoE(c, dtype, device) if c.is_sparse(layer_id) else MLP(c, dtype, device)

    def weight_parts(self) -> dict[str, tuple[str, int, int]]:
        c = self.config
        parts = super().weight_parts()
        e_inter, hidden = c.moe_intermediate_size, c.hidden_size
        for layer in range(c.num_layers):
            if not c.is_sparse(layer):
                continue
            mlp = f"model.layers.{layer}.mlp"
            for name in ("gate_proj", "up_proj"):
                del parts[f"{mlp}.{name}.weight"]  # no dense MLP in a sparse layer
            for e in range(c.num_experts):
                first = e * 2 * e_inter
                parts[f"{mlp}.experts.{e}.gate_proj.weight"] = (f"{mlp}.experts.gate_up", first, e_inter)
                parts[f"{mlp}.experts.{e}.up_proj.weight"] = (f"{mlp}.experts.gate_up", first + e_inter, e_inter)
                parts[f"{mlp}.experts.{e}.down_proj.weight"] = (f"{mlp}.experts.down", e * hidden, hidden)
        return parts

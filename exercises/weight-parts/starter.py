"""Exercise weight-parts: DenseCausalLM.weight_parts.

Your code runs as if written in minisgl/models/dense.py. The class is the engine's DenseCausalLM (the
base of LlamaForCausalLM and Qwen3ForCausalLM); self.config is its ModelConfig.
"""

from __future__ import annotations


class DenseCausalLM:
    def weight_parts(self) -> dict[str, tuple[str, int, int]]:
        """Checkpoint name -> (our name, first row, rows) for the tensors merged into one: q/k/v into
        self_attn.qkv_proj, gate/up into mlp.gate_up_proj (weights, and biases when the config has them)."""
        raise NotImplementedError("write weight_parts")

"""The model's shape, read from a Hugging Face config.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ModelLoadError(ValueError):
    """A model folder that cannot be loaded: the message says what is wrong and where."""


@dataclass(frozen=True)
class ModelConfig:
    architecture: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict | None
    max_position: int
    tie_word_embeddings: bool
    attention_bias: bool
    mlp_bias: bool
    eos_token_ids: tuple[int, ...]
    # Mixture of Experts (Qwen3-MoE); num_experts 0: a dense model
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    norm_topk_prob: bool = False  # renormalise the top-k routing weights to sum to 1
    decoder_sparse_step: int = 1  # every step-th layer is sparse (layer_id + 1 divisible by it) ...
    mlp_only_layers: tuple[int, ...] = ()  # ... except these, dense whatever the step

    def is_sparse(self, layer_id: int) -> bool:
        """Whether layer ``layer_id``'s MLP is a Mixture of Experts (Hugging Face's rule)."""
        return (self.num_experts > 0 and layer_id not in self.mlp_only_layers
                and (layer_id + 1) % self.decoder_sparse_step == 0)

    @classmethod
    def from_path(cls, path: str | Path) -> ModelConfig:
        folder = Path(path)
        if not folder.is_dir():
            raise ModelLoadError(f"model folder {str(folder)!r} does not exist")
        file = folder / "config.json"
        if not file.is_file():
            raise ModelLoadError(f"{file}: no config.json in the model folder")
        try:
            raw = json.loads(file.read_text())
        except json.JSONDecodeError as e:
            raise ModelLoadError(f"{file}: not valid JSON ({e})") from None
        return cls.from_dict(raw, source=str(file))

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "config") -> ModelConfig:
        archs = raw.get("architectures") or []
        if not archs:
            raise ModelLoadError(f"{source}: field 'architectures' is missing")

        def need(key: str) -> Any:
            if key not in raw:
                raise ModelLoadError(f"{source}: field {key!r} is missing")
            return raw[key]

        num_heads = int(need("num_attention_heads"))
        hidden = int(need("hidden_size"))
        rope = raw.get("rope_parameters") or {}
        rope_theta = float(raw.get("rope_theta", rope.get("rope_theta", 10000.0)))
        scaling = raw.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default" else None)
        eos = raw.get("eos_token_id")
        eos_ids = tuple(eos) if isinstance(eos, list) else (() if eos is None else (int(eos),))
        return cls(
            architecture=archs[0],
            num_layers=int(need("num_hidden_layers")),
            hidden_size=hidden,
            num_heads=num_heads,
            num_kv_heads=int(raw.get("num_key_value_heads") or num_heads),
            head_dim=int(raw.get("head_dim") or hidden // num_heads),
            intermediate_size=int(need("intermediate_size")),
            vocab_size=int(need("vocab_size")),
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            rope_theta=rope_theta,
            rope_scaling=scaling,
            max_position=int(raw.get("max_position_embeddings", 4096)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
            attention_bias=bool(raw.get("attention_bias", False)),
            mlp_bias=bool(raw.get("mlp_bias", False)),
            eos_token_ids=eos_ids,
            num_experts=int(raw.get("num_experts") or raw.get("num_local_experts") or 0),
            num_experts_per_tok=int(raw.get("num_experts_per_tok") or 0),
            moe_intermediate_size=int(raw.get("moe_intermediate_size") or 0),
            norm_topk_prob=bool(raw.get("norm_topk_prob", False)),
            decoder_sparse_step=int(raw.get("decoder_sparse_step") or 1),
            mlp_only_layers=tuple(int(i) for i in raw.get("mlp_only_layers") or ()),
        )

from __future__ import annotations

from pathlib import Path

import torch

from minisgl.models.base import BaseLLMModel
from minisgl.models.config import ModelConfig, ModelLoadError
from minisgl.models.llama import LlamaForCausalLM
from minisgl.models.qwen3 import Qwen3ForCausalLM
from minisgl.models.qwen3_moe import Qwen3MoeForCausalLM
from minisgl.models.weight import load_weights
from minisgl.utils import Registry

MODELS: Registry[BaseLLMModel] = Registry("model architecture")
MODELS.register("LlamaForCausalLM")(LlamaForCausalLM)
MODELS.register("Qwen3ForCausalLM")(Qwen3ForCausalLM)
MODELS.register("Qwen3MoeForCausalLM")(Qwen3MoeForCausalLM)


def create_model(path: str | Path, config: ModelConfig, dtype: torch.dtype, device: torch.device) -> BaseLLMModel:
    try:
        cls = MODELS.get(config.architecture)
    except ValueError as e:
        raise ModelLoadError(f"{path}: {e}") from None
    with torch.device(device):
        model = cls(config, dtype, device)
    load_weights(model, path, device)
    return model


__all__ = ["BaseLLMModel", "MODELS", "ModelConfig", "ModelLoadError", "create_model"]

from __future__ import annotations

from abc import abstractmethod

import torch

from minisgl.layers.base import BaseOP
from minisgl.models.config import ModelConfig


class BaseLLMModel(BaseOP):
    """A causal LM whose forward() reads the batch from the global context and returns float32 logits."""

    def __init__(self, config: ModelConfig) -> None:
        self._config = config

    @property
    def config(self) -> ModelConfig:
        return self._config

    @abstractmethod
    def forward(self) -> torch.Tensor: ...

    def weight_parts(self) -> dict[str, tuple[str, int, int]]:
        """Checkpoint name -> (our name, first row, rows) for tensors merged into one (q/k/v, gate/up)."""
        return {}

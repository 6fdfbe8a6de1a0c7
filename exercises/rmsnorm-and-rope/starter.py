"""Exercise rmsnorm-and-rope: RMSNorm.forward, RotaryEmbedding.cos_sin and RotaryEmbedding.forward.

Your code runs as if written in minisgl/layers/norm.py and minisgl/layers/rotary.py (torch is imported). The
classes are the engine's: RMSNorm has self.weight [dim] and self._eps; RotaryEmbedding has the tables self._cos and
self._sin, [max_position, D].
"""

from __future__ import annotations

import torch


class RMSNorm:
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """weight * (x / sqrt(mean(x^2, last dim) + eps)), normalised in float32 and cast back before scaling."""
        raise NotImplementedError("write RMSNorm.forward")


class RotaryEmbedding:
    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The table rows at positions [T], each as [T, 1, D]."""
        raise NotImplementedError("write cos_sin")

    @staticmethod
    def forward(cos_sin: tuple[torch.Tensor, torch.Tensor], q: torch.Tensor,
                k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin), rotate_half(x) = cat(-x2, x1)."""
        raise NotImplementedError("write RotaryEmbedding.forward")

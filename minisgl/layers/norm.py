from __future__ import annotations

import torch

from minisgl.layers.base import BaseOP


class RMSNorm(BaseOP):
    """As Hugging Face computes it: normalise in float32, cast back, then scale."""

    def __init__(self, dim: int, eps: float, dtype: torch.dtype, device: torch.device):
        self.weight = torch.empty(dim, dtype=dtype, device=device)
        self._eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self._eps)
        return self.weight * h.to(dtype)

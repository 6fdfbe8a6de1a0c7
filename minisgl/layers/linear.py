from __future__ import annotations

import torch
import torch.nn.functional as F

from minisgl.layers.base import BaseOP


class Linear(BaseOP):
    """y = x W^T (+ b). Merged projections (q/k/v, gate/up) are one Linear whose rows are the parts, in order."""

    def __init__(self, in_features: int, out_features: int, bias: bool, dtype: torch.dtype, device: torch.device):
        self.weight = torch.empty(out_features, in_features, dtype=dtype, device=device)
        self.bias = torch.empty(out_features, dtype=dtype, device=device) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from minisgl.distributed.comm import get_comm
from minisgl.layers.base import BaseOP

# A kernel the engine chose at start-up (minisgl.engine.linear_path): x -> x W^T (+ b) from a re-laid-out copy of W.
FastLinear = Callable[[torch.Tensor], torch.Tensor]


def _version(t: torch.Tensor | None) -> int:
    """The tensor's in-place write counter; an inference tensor has none (only its identity is checked)."""
    return -1 if t is None or t.is_inference() else t._version


class PreparedLinear:
    """A fast kernel bound to the exact weight (and bias) it was prepared from, at the version it had then: a weight
    replaced or changed in place afterwards makes it stale, and the layer falls back to F.linear."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, kernel: FastLinear) -> None:
        self._w, self._b, self.kernel = weight, bias, kernel
        self._versions = (_version(weight), _version(bias))

    def fresh(self, weight: torch.Tensor, bias: torch.Tensor | None) -> bool:
        return weight is self._w and bias is self._b and (_version(weight), _version(bias)) == self._versions


class Linear(BaseOP):
    """y = x W^T (+ b). Merged projections (q/k/v, gate/up) are one Linear whose rows are the parts, in order."""

    def __init__(self, in_features: int, out_features: int, bias: bool, dtype: torch.dtype, device: torch.device):
        self.weight = torch.empty(out_features, in_features, dtype=dtype, device=device)
        self.bias = torch.empty(out_features, dtype=dtype, device=device) if bias else None
        self._fast: PreparedLinear | None = None  # set by the engine's linear path; never state (a '_' name)
        self._all_reduce = False  # row-parallel (minisgl/distributed): the ranks' outputs are summed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fast = self._fast
        if fast is not None and fast.fresh(self.weight, self.bias):
            y = fast.kernel(x)
        else:
            y = F.linear(x, self.weight, self.bias)
        if self._all_reduce:
            get_comm().all_reduce(y)
        return y

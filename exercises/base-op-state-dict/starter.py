"""Exercise base-op-state-dict: BaseOP.state_dict and BaseOP.load_state_dict.

Your code runs as if written in minisgl/layers/base.py (torch is imported). The class is the engine's
BaseOP: write the two methods inside this stub of the same name. self._children() is the engine's own
(OPList overrides it to name its ops "0", "1", ...).
"""

from __future__ import annotations

import torch


class BaseOP:
    def state_dict(self, prefix: str = "") -> dict[str, torch.Tensor]:
        """Every tensor of this op and (recursively, names joined with '.') of its child ops, in the order of
        self._children(); the op's own tensors, not copies."""
        raise NotImplementedError("write state_dict")

    def load_state_dict(self, state: dict[str, torch.Tensor], prefix: str = "") -> None:
        """Copy state's tensors into this op's tensors, in place. KeyError (naming them) if any is missing, before
        copying anything; ValueError (naming the weight and both shapes) on a shape mismatch; extra keys ignored."""
        raise NotImplementedError("write load_state_dict")

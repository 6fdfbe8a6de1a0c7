"""load_state_dict, "the copy is in place": the weight's .data is rebound to the given tensor (same object, same
dtype, but new memory): views taken before the load keep the old values, and the weight aliases the state dict."""

from __future__ import annotations

import torch


class BaseOP:
    def state_dict(self, prefix: str = "") -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        for name, value in self._children():
            if isinstance(value, torch.Tensor):
                out[prefix + name] = value
            elif isinstance(value, BaseOP):
                out.update(value.state_dict(f"{prefix}{name}."))
        return out

    def load_state_dict(self, state: dict[str, torch.Tensor], prefix: str = "") -> None:
        """Copy tensors in place; every tensor of this op must be given, with its shape."""
        own = self.state_dict(prefix)
        missing = sorted(set(own) - set(state))
        if missing:
            raise KeyError(f"missing weights: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
        for name, dst in own.items():
            src = state[name]
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(f"weight {name}: shape {tuple(src.shape)} does not match {tuple(dst.shape)}")
            new = src.to(dst.dtype)
            if hasattr(type(dst), "data"):
                dst.data = new
            else:  # the browser's numpy torch has no .data: rebinding its array is the same mistake there
                dst._a = new._a

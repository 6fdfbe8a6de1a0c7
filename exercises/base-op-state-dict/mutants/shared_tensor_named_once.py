"""state_dict, "for each (name, value) of self._children() ... a tensor goes in under prefix + name": a tensor already
in the dict (held under another name) is skipped, as named_parameters() does, so only its first name is kept."""

from __future__ import annotations

import torch


class BaseOP:
    def state_dict(self, prefix: str = "") -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        for name, value in self._children():
            if isinstance(value, torch.Tensor):
                if any(v is value for v in out.values()):
                    continue
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
            dst.copy_(src)

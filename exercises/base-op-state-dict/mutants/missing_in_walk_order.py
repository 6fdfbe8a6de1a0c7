"""The KeyError names the first five missing weights in the order of the walk, not in sorted order\n(layers.10 sorts before layers.2)."""

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
        missing = [k for k in own if k not in state]
        if missing:
            raise KeyError(f"missing weights: {', '.join(missing[:5])}")
        for name, dst in own.items():
            src = state[name]
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(f"weight {name}: shape {tuple(src.shape)} does not match {tuple(dst.shape)}")
            dst.copy_(src)

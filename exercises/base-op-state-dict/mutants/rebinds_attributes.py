"""load_state_dict puts the given tensors in place of the op's (setattr) instead of copying into them."""

import torch

from minisgl.layers.base import OPList


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
        missing = sorted(set(own) - set(state))
        if missing:
            raise KeyError(f"missing weights: {missing[:5]}")
        for name, dst in own.items():
            src = state[name]
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(f"weight {name}: shape {tuple(src.shape)} does not match {tuple(dst.shape)}")
            *path, leaf = name[len(prefix):].split(".")
            obj = self
            for part in path:
                obj = obj[int(part)] if isinstance(obj, OPList) else getattr(obj, part)
            setattr(obj, leaf, src)

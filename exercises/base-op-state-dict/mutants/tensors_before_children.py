"""state_dict, "for each (name, value) of self._children(), in that order": the op's own tensors come first, then its child ops, whatever the order the attributes were set in."""

import torch


class BaseOP:
    def state_dict(self, prefix=""):
        out = {}
        children = list(self._children())
        for name, value in children:
            if isinstance(value, torch.Tensor):
                out[prefix + name] = value
        for name, value in children:
            if isinstance(value, BaseOP):
                out.update(value.state_dict(f"{prefix}{name}."))
        return out

    def load_state_dict(self, state, prefix=""):
        own = self.state_dict(prefix)
        missing = sorted(set(own) - set(state))
        if missing:
            raise KeyError(f"missing weights: {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}")
        for name, dst in own.items():
            src = state[name]
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(f"weight {name}: shape {tuple(src.shape)} does not match {tuple(dst.shape)}")
            dst.copy_(src)

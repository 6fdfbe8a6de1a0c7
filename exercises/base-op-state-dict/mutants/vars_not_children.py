"""state_dict walks vars(self) instead of self._children(): an OPList's ops (the decoder layers) vanish."""

import torch


class BaseOP:
    def state_dict(self, prefix=""):
        out = {}
        for name, value in vars(self).items():
            if name.startswith("_"):
                continue
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
            dst.copy_(src)

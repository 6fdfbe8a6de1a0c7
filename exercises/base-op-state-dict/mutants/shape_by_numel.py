"""load_state_dict compares the number of elements, not the shapes: a transposed [n, m] tensor passes the\ncheck for an [m, n] weight."""

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
        missing = sorted(set(own) - set(state))
        if missing:
            raise KeyError(f"missing weights: {', '.join(missing[:5])}")
        for name, dst in own.items():
            src = state[name]
            if src.numel() != dst.numel():
                raise ValueError(f"weight {name}: shape {tuple(src.shape)} does not match {tuple(dst.shape)}")
            dst.copy_(src)

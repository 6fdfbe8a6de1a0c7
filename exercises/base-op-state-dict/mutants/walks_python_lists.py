"""state_dict walks into plain Python lists and tuples of ops and tensors, as if they were OPLists: a\nlist is not an op, its tensors are not state (a shared cache or a list of other ops' weights)."""

import torch


class BaseOP:
    def state_dict(self, prefix=""):
        out = {}
        for name, value in self._children():
            if isinstance(value, torch.Tensor):
                out[prefix + name] = value
            elif isinstance(value, BaseOP):
                out.update(value.state_dict(f"{prefix}{name}."))
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, torch.Tensor):
                        out[f"{prefix}{name}.{i}"] = item
                    elif isinstance(item, BaseOP):
                        out.update(item.state_dict(f"{prefix}{name}.{i}."))
        return out

    def load_state_dict(self, state, prefix=""):
        own = self.state_dict(prefix)
        missing = sorted(set(own) - set(state))
        if missing:
            raise KeyError(f"missing weights: {', '.join(missing[:5])}")
        for name, dst in own.items():
            src = state[name]
            if tuple(src.shape) != tuple(dst.shape):
                raise ValueError(f"weight {name}: shape {tuple(src.shape)} does not match {tuple(dst.shape)}")
            dst.copy_(src)

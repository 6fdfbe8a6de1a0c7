"""The base of every layer: plain objects holding tensors, with state_dict/load_state_dict (no nn.Module)."""

from __future__ import annotations

from collections.abc import Iterator

import torch


class BaseOP:
    """Tensors and child ops held as public attributes are its state; names starting with '_' are not."""

    def _children(self) -> Iterator[tuple[str, object]]:
        for name, value in vars(self).items():
            if not name.startswith("_"):
                yield name, value

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
            dst.copy_(src)


class OPList(BaseOP):
    def __init__(self, ops: list[BaseOP]) -> None:
        self._ops = ops

    def __iter__(self) -> Iterator[BaseOP]:
        return iter(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def __getitem__(self, i: int) -> BaseOP:
        return self._ops[i]

    def _children(self) -> Iterator[tuple[str, object]]:
        for i, op in enumerate(self._ops):
            yield str(i), op


def model_ops(op: BaseOP, kind: type) -> Iterator:
    """Every op of ``kind`` under ``op`` (public attributes, depth first)."""
    for _, child in op._children():
        if isinstance(child, kind):
            yield child
        if isinstance(child, BaseOP):
            yield from model_ops(child, kind)

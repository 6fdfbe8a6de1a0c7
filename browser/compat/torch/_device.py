"""torch.device: only the CPU holds tensors here; 'cuda' devices exist as names (minisgl asks their .type)."""

from __future__ import annotations

_TYPES = ("cpu", "cuda")
_stack: list[device] = []  # `with torch.device(...)`: the default device of factory functions


class device:
    __module__ = "torch"
    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002 - torch's name
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expects a string or a torch.device, got {type.__class__.__name__}")
        name, _, idx = type.partition(":")
        if name not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}"
                               " (the browser's torch knows only these)")
        if idx:
            if index is not None or not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type, self.index = name, index

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __enter__(self) -> device:
        _stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _stack.pop()


CPU = device("cpu")


def check(dev: object) -> device:
    """The device a tensor is made on: the CPU; asking for CUDA fails as on a torch built without it."""
    d = (_stack[-1] if _stack else CPU) if dev is None else (dev if isinstance(dev, device) else device(dev))
    if d.type != "cpu":
        raise AssertionError("Torch not compiled with CUDA enabled")
    return d

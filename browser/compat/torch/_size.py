from __future__ import annotations


class Size(tuple):
    """torch.Size: a tuple of ints."""

    __module__ = "torch"
    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def __getitem__(self, key):  # type: ignore[override]
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other: tuple) -> Size:  # type: ignore[override]
        return Size(tuple.__add__(self, other))

    def __radd__(self, other: tuple) -> Size:
        return Size(tuple.__add__(other, self))

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

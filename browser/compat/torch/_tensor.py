"""torch.Tensor on a numpy array. A Tensor holds one ndarray, ``_a``; views are numpy views of the same memory,
so writes through a slice, ``view`` or ``permute`` show in the tensor they came from, as in torch."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype as D
from ._device import CPU, check
from ._size import Size
from ._unsupported import missing


def wrap(a: Any) -> Tensor:
    """A Tensor around an ndarray (a numpy scalar becomes a 0-d array: 0-d results stay tensors)."""
    t = object.__new__(Tensor)
    t._a = a if type(a) is np.ndarray else np.asarray(a)
    return t


def norm_dim(dim: Any, ndim: int) -> int:
    """A dimension index in range, as torch checks it (a 0-d tensor accepts -1 and 0)."""
    if isinstance(dim, Tensor) or not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"a dimension must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def shape_arg(args: tuple) -> tuple[int, ...]:
    """Sizes given as f(2, 3), f((2, 3)), f([2, 3]) or f(torch.Size([2, 3]))."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for s in args:
        if isinstance(s, Tensor):
            s = s.__index__()
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(f"sizes must be ints, got {type(s).__name__}")
        out.append(s)
    return tuple(out)


def no_extras(fn: str, **kw: Any) -> None:
    """Keyword arguments of torch that this layer has no use for must keep their defaults."""
    for name, value in kw.items():
        if value not in (None, False):
            raise missing(f"{fn}({name}=...)")


class Tensor:
    __module__ = "torch"
    __slots__ = ("_a", "__weakref__")
    __hash__ = object.__hash__  # tensors hash by identity (== is elementwise)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise missing("torch.Tensor(...) (the legacy constructor; use torch.tensor)")

    def __getattr__(self, name: str) -> Any:  # only called for names the class does not have
        if name.startswith("_"):
            raise AttributeError(name)
        raise missing(f"Tensor.{name}")

    # ---- metadata
    @property
    def shape(self) -> Size:
        return Size(self._a.shape)

    @property
    def dtype(self) -> D.dtype:
        return D.FROM_NUMPY[self._a.dtype]

    @property
    def device(self) -> Any:
        return CPU

    @property
    def ndim(self) -> int:
        return self._a.ndim

    def size(self, dim: int | None = None) -> Any:
        return Size(self._a.shape) if dim is None else self._a.shape[norm_dim(dim, self._a.ndim)]

    def dim(self) -> int:
        return self._a.ndim

    def numel(self) -> int:
        return self._a.size

    def element_size(self) -> int:
        return self._a.itemsize

    def data_ptr(self) -> int:
        """The address of the first element (0 for an empty tensor, as in torch)."""
        return self._a.__array_interface__["data"][0] if self._a.size else 0

    def is_contiguous(self) -> bool:
        return self._a.flags.c_contiguous  # numpy ignores the strides of size-1 dims, as torch does

    def is_floating_point(self) -> bool:
        return self._a.dtype.kind == "f"

    # ---- conversion
    def to(self, *args: Any, dtype: D.dtype | None = None, device: Any = None, non_blocking: bool = False,
           copy: bool = False, memory_format: Any = None) -> Tensor:
        """.to(dtype), .to(device), .to(device, dtype), .to(other), keywords too; self when nothing changes."""
        no_extras("Tensor.to", memory_format=memory_format)
        for a in args:
            if isinstance(a, D.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            else:
                device = a
        check(device if device is not None else CPU)
        if dtype is None or D.to_numpy(dtype) == self._a.dtype:
            return wrap(self._a.copy(order="K")) if copy else self
        return wrap(self._a.astype(D.to_numpy(dtype), order="K"))

    def float(self) -> Tensor:
        return self.to(D.float32)

    def double(self) -> Tensor:
        return self.to(D.float64)

    def long(self) -> Tensor:
        return self.to(D.int64)

    def int(self) -> Tensor:
        return self.to(D.int32)

    def bool(self) -> Tensor:
        return self.to(D.bool_)

    def cpu(self) -> Tensor:
        return self

    def tolist(self) -> Any:
        return self._a.tolist()

    def item(self) -> Any:
        if self._a.size != 1:
            raise RuntimeError(f"a Tensor with {self._a.size} elements cannot be converted to Scalar")
        return self._a.item()

    def __bool__(self) -> bool:
        if self._a.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'more than one value' if self._a.size else 'no values'}"
                               " is ambiguous")
        return bool(self._a.item())

    def __int__(self) -> int:
        return int(self._scalar())

    def __float__(self) -> float:
        return float(self._scalar())

    def _scalar(self) -> Any:
        if self._a.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._a.item()

    def __index__(self) -> int:
        if self._a.size != 1 or self._a.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._a.item())

    def __len__(self) -> int:
        if not self._a.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._a.shape[0]

    def __iter__(self) -> Any:
        if not self._a.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return (wrap(self._a[i, ...]) for i in range(self._a.shape[0]))

    def __repr__(self) -> str:
        body = np.array2string(self._a, separator=", ", threshold=1000, prefix="tensor(")
        default = self._a.dtype in (np.float32, np.int64, np.bool_) and self._a.size
        return f"tensor({body})" if default else f"tensor({body}, dtype={self.dtype})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self._a.item(), spec) if self._a.ndim == 0 else format(repr(self), spec)

    def __deepcopy__(self, memo: dict) -> Tensor:
        return self.clone()

    # ---- memory
    def clone(self) -> Tensor:
        return wrap(self._a.copy(order="K"))  # keeps the strides' order, as torch's preserve_format

    def detach(self) -> Tensor:
        """A new tensor on the same memory (there is no autograd graph to leave)."""
        return wrap(self._a[...])

    def contiguous(self) -> Tensor:
        return self if self._a.flags.c_contiguous else wrap(np.ascontiguousarray(self._a))

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        if isinstance(src, (bool, int, float)):
            return self.fill_(src)
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(src).__name__}")
        try:
            np.copyto(self._a, src._a, casting="unsafe")
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({list(self._a.shape)}) must match the size of tensor b "
                               f"({list(src._a.shape)})") from None
        return self

    def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
        return _random.exponential_(self, lambd, generator=generator)

    def fill_(self, value: Any) -> Tensor:
        if isinstance(value, Tensor):
            if value._a.ndim:
                raise RuntimeError("fill_ only supports 0-dimension value tensor")
            value = value._a.item()
        self._a[...] = value
        return self

    def zero_(self) -> Tensor:
        return self.fill_(0)

    # ---- shape (views where torch makes views)
    def view(self, *shape: Any) -> Tensor:
        return _shape.view(self, *shape)

    def reshape(self, *shape: Any) -> Tensor:
        return _shape.reshape(self, *shape)

    def permute(self, *dims: Any) -> Tensor:
        return _shape.permute(self, *dims)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        return _shape.transpose(self, dim0, dim1)

    @property
    def T(self) -> Tensor:  # noqa: N802 - torch's name
        """All dims reversed (torch deprecates, but allows, ndim > 2); a view."""
        return _shape.permute(self, *range(self._a.ndim - 1, -1, -1)) if self._a.ndim else wrap(self._a[...])

    def t(self) -> Tensor:
        if self._a.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self._a.ndim}D")
        return _shape.transpose(self, 0, -1) if self._a.ndim == 2 else wrap(self._a[...])

    def unsqueeze(self, dim: int) -> Tensor:
        return _shape.unsqueeze(self, dim)

    def squeeze(self, dim: Any = None) -> Tensor:
        return _shape.squeeze(self, dim)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        return _shape.flatten(self, start_dim, end_dim)

    def narrow(self, dim: int, start: Any, length: int) -> Tensor:
        return _shape.narrow(self, dim, start, length)

    def flip(self, *dims: Any) -> Tensor:
        return _shape.flip(self, *dims)

    def repeat_interleave(self, repeats: Any, dim: int | None = None, *, output_size: int | None = None) -> Tensor:
        return _shape.repeat_interleave(self, repeats, dim, output_size=output_size)

    # ---- indexing
    def __getitem__(self, key: Any) -> Tensor:
        return _index.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _index.setitem(self, key, value)

    def gather(self, dim: int, index: Tensor) -> Tensor:
        return _index.gather(self, dim, index)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        return _index.index_select(self, dim, index)

    def index_copy_(self, dim: int, index: Tensor, source: Tensor) -> Tensor:
        return _index.index_copy_(self, dim, index, source)

    def scatter_(self, dim: int, index: Tensor, src: Any, *, reduce: str | None = None) -> Tensor:
        return _index.scatter_(self, dim, index, src, reduce=reduce)

    def masked_fill(self, mask: Tensor, value: Any) -> Tensor:
        return _index.masked_fill(self, mask, value)

    def masked_fill_(self, mask: Tensor, value: Any) -> Tensor:
        return _index.masked_fill_(self, mask, value)

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        return _index.nonzero(self, as_tuple=as_tuple)

    # ---- elementwise
    def add(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _ops.add(self, other, alpha=alpha)

    def sub(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _ops.sub(self, other, alpha=alpha)

    def mul(self, other: Any) -> Tensor:
        return _ops.mul(self, other)

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return _ops.div(self, other, rounding_mode=rounding_mode)

    def pow(self, exponent: Any) -> Tensor:
        return _ops.pow(self, exponent)

    def add_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _ops.inplace(self, _ops.add(self, other, alpha=alpha))

    def sub_(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return _ops.inplace(self, _ops.sub(self, other, alpha=alpha))

    def mul_(self, other: Any) -> Tensor:
        return _ops.inplace(self, _ops.mul(self, other))

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return _ops.inplace(self, _ops.div(self, other, rounding_mode=rounding_mode))

    # neg, abs, exp, log ... (and -t, abs(t), ~t): made from _UNARY below the class

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's names
        return _ops.clamp(self, min, max)

    # ---- comparison (results are bool tensors)
    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        return _ops.compare("eq", self, other) if _ops.is_operand(other) else NotImplemented

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return _ops.compare("ne", self, other) if _ops.is_operand(other) else NotImplemented

    # the other comparisons and the binary operators: made from the tables below the class

    # ---- reductions, sorting
    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: D.dtype | None = None) -> Tensor:
        return _reduce.sum(self, dim, keepdim, dtype=dtype)

    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: D.dtype | None = None) -> Tensor:
        return _reduce.mean(self, dim, keepdim, dtype=dtype)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        """max(), max(dim, keepdim=False) -> (values, indices), max(other) -> the elementwise maximum."""
        return _reduce.max(self, *args, **kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return _reduce.min(self, *args, **kwargs)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _reduce.argmax(self, dim, keepdim)

    def all(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _reduce.all(self, dim, keepdim)

    def any(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _reduce.any(self, dim, keepdim)

    def cumsum(self, dim: int, *, dtype: D.dtype | None = None) -> Tensor:
        return _reduce.cumsum(self, dim, dtype=dtype)

    def softmax(self, dim: int, dtype: D.dtype | None = None) -> Tensor:
        return _reduce.softmax(self, dim, dtype=dtype)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
        return _reduce.sort(self, dim, descending, stable=stable)

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        return _reduce.argsort(self, dim, descending, stable=stable)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
        return _reduce.topk(self, k, dim, largest, sorted)



# The binary operators, as torch has them: stem -> (forms, the _ops function, its leading arguments, keywords).
# Each stem gives ``__stem__`` (self op other), plus ``__rstem__`` (other op self) for form "r" and ``__istem__``
# (in place, through _ops.inplace) for form "i".
_OPERATORS: dict[str, tuple[str, str, tuple, dict]] = {
    "add": ("ri", "add", (), {}),
    "sub": ("ri", "sub", (), {}),
    "mul": ("ri", "mul", (), {}),
    "truediv": ("ri", "div", (), {}),
    "floordiv": ("ri", "div", (), {"rounding_mode": "floor"}),
    "mod": ("r", "remainder", (), {}),
    "pow": ("r", "pow", (), {}),
    "matmul": ("", "matmul", (), {}),
    "and": ("r", "bitwise", ("and",), {}),
    "or": ("r", "bitwise", ("or",), {}),
    "xor": ("r", "bitwise", ("xor",), {}),
}
# the comparisons (bool tensors): eq, ne, lt ... as methods; lt, le, gt, ge as operators too (__eq__ and __ne__
# are written out in the class: they answer NotImplemented for what is not an operand)
_COMPARISONS = {"eq": False, "ne": False, "lt": True, "le": True, "gt": True, "ge": True}
# the elementwise functions of one tensor: method -> the _ops function
_UNARY = {"__neg__": "neg", "neg": "neg", "abs": "abs", "__invert__": "bitwise_not", "exp": "exp", "log": "log",
          "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos"}


def _method(name: str, op: str, lead: tuple, kw: dict, swap: bool = False, inplace: bool = False) -> Any:
    """``Tensor.<name>(self, other)``: ``_ops.<op>(*lead, self, other, **kw)`` (swapped: other, self), in place or
    not. ``_ops`` is looked up at call time: it is imported after the class."""

    def method(self: Tensor, other: Any) -> Tensor:
        fn = getattr(_ops, op)
        out = fn(*lead, other, self, **kw) if swap else fn(*lead, self, other, **kw)
        return _ops.inplace(self, out) if inplace else out

    return _named(method, name)


def _unary(name: str, op: str) -> Any:
    """``Tensor.<name>(self)``: ``_ops.<op>(self)``."""

    def method(self: Tensor) -> Tensor:
        return getattr(_ops, op)(self)

    return _named(method, name)


def _named(method: Any, name: str) -> Any:
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    return method


for _stem, (_forms, _op, _lead, _kw) in _OPERATORS.items():
    setattr(Tensor, f"__{_stem}__", _method(f"__{_stem}__", _op, _lead, _kw))
    if "r" in _forms:
        setattr(Tensor, f"__r{_stem}__", _method(f"__r{_stem}__", _op, _lead, _kw, swap=True))
    if "i" in _forms:
        setattr(Tensor, f"__i{_stem}__", _method(f"__i{_stem}__", _op, _lead, _kw, inplace=True))
for _cmp, _dunder in _COMPARISONS.items():
    setattr(Tensor, _cmp, _method(_cmp, "compare", (_cmp,), {}))
    if _dunder:
        setattr(Tensor, f"__{_cmp}__", _method(f"__{_cmp}__", "compare", (_cmp,), {}))
for _name, _op in _UNARY.items():
    setattr(Tensor, _name, _unary(_name, _op))
Tensor.__abs__ = Tensor.abs
del _stem, _forms, _op, _lead, _kw, _cmp, _dunder, _name


from . import _index, _ops, _random, _reduce, _shape  # noqa: E402 - these modules build on Tensor

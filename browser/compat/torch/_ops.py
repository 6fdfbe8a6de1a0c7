"""Elementwise math, comparisons and matmul, each computed in torch's result dtype (see _dtype.result_type)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype as D
from ._tensor import Tensor, wrap
from ._unsupported import missing

_NAMES = D.NAMES
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal}
_BITWISE = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def is_operand(x: Any) -> bool:
    return isinstance(x, (Tensor, bool, int, float))


def _fits(x: int, nt: np.dtype) -> bool:
    info = np.iinfo(nt)
    return int(info.min) <= x <= int(info.max)


def _operands(a: Any, b: Any, rt: D.dtype) -> tuple[Any, Any]:
    """Both operands in the dtype rt; Python scalars stay scalars (numpy then takes the array's dtype)."""
    nt = D.to_numpy(rt)
    out = []
    for x in (a, b):
        if isinstance(x, Tensor):
            out.append(x._a if x._a.dtype == nt else x._a.astype(nt))
        elif isinstance(x, int) and not isinstance(x, bool) and nt.kind in "iu" and not _fits(x, nt):
            out.append(np.asarray(x, dtype=np.int64).astype(nt))  # torch wraps a Python int into the dtype
        elif isinstance(x, (bool, int, float)):
            out.append(x)
        else:
            raise TypeError(f"unsupported operand type for a tensor operation: {type(x).__name__}")
    return out[0], out[1]


def _result(out: Any, rt: D.dtype) -> Tensor:
    nt = D.to_numpy(rt)
    return wrap(out if getattr(out, "dtype", None) == nt else np.asarray(out).astype(nt))


def _broadcast_error(a: Any, b: Any) -> RuntimeError:
    sa, sb = (list(np.shape(x._a)) if isinstance(x, Tensor) else [] for x in (a, b))
    return RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at a non-singleton "
                        "dimension")


def _apply(fn: Any, a: Any, b: Any, rt: D.dtype, quiet: bool = True) -> Any:
    """fn on both operands in dtype rt; quiet: no numpy warnings (torch divides by zero without a word)."""
    x, y = _operands(a, b, rt)
    try:
        if not quiet:
            return fn(x, y)
        with np.errstate(all="ignore"):
            return fn(x, y)
    except ValueError:
        raise _broadcast_error(a, b) from None


def add(a: Any, b: Any, *, alpha: Any = 1) -> Tensor:
    if alpha != 1:
        raise missing("torch.add(alpha=...)")
    rt = D.result_type(a, b)
    return _result(_apply(np.add, a, b, rt, quiet=False), rt)


def sub(a: Any, b: Any, *, alpha: Any = 1) -> Tensor:
    if alpha != 1:
        raise missing("torch.sub(alpha=...)")
    rt = D.result_type(a, b)
    bools = [isinstance(x, bool) or isinstance(x, Tensor) and x._a.dtype == np.bool_ for x in (a, b)]
    if all(bools):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if any(bools):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    return _result(_apply(np.subtract, a, b, rt, quiet=False), rt)


def mul(a: Any, b: Any) -> Tensor:
    rt = D.result_type(a, b)
    return _result(_apply(np.multiply, a, b, rt, quiet=False), rt)


def _no_int_zero(a: Any, b: Any, rt: D.dtype) -> None:
    if rt.is_floating_point:
        return
    try:
        if 0 in np.broadcast_shapes(*(x._a.shape for x in (a, b) if isinstance(x, Tensor))):
            return  # nothing is divided
    except ValueError:
        return  # the division itself reports the shapes
    if b == 0 if not isinstance(b, Tensor) else (b._a == 0).any():
        raise RuntimeError("ZeroDivisionError")


def div(a: Any, b: Any, *, rounding_mode: str | None = None) -> Tensor:
    rt = D.result_type(a, b)
    if rounding_mode is None:  # true division: integers divide as float32
        ft = rt if rt.is_floating_point else D.DEFAULT_FLOAT
        return _result(_apply(np.true_divide, a, b, ft), ft)
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    if rt is D.bool_:
        raise NotImplementedError(f'"div_{rounding_mode}_cpu" not implemented for \'Bool\'')
    _no_int_zero(a, b, rt)
    if rounding_mode == "floor":
        return _result(_apply(np.floor_divide, a, b, rt), rt)
    if rt.is_floating_point:
        return _result(np.trunc(_apply(np.true_divide, a, b, rt)), rt)
    x, y = _operands(a, b, rt)
    q, r = np.floor_divide(x, y), np.remainder(x, y)
    return _result(q + ((r != 0) & ((np.asarray(x) < 0) != (np.asarray(y) < 0))), rt)  # floor -> toward zero


def remainder(a: Any, b: Any) -> Tensor:
    rt = D.result_type(a, b)
    if rt is D.bool_:
        raise NotImplementedError('"remainder_cpu" not implemented for \'Bool\'')
    _no_int_zero(a, b, rt)
    return _result(_apply(np.remainder, a, b, rt), rt)


def pow(a: Any, b: Any) -> Tensor:  # noqa: A001 - torch's name
    rt = D.result_type(a, b)
    if rt is D.bool_ and isinstance(b, Tensor):  # (a bool tensor ** True is computed)
        raise NotImplementedError('"pow" not implemented for \'Bool\'')
    if not rt.is_floating_point and not isinstance(b, Tensor) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return _result(_apply(np.power if rt.is_floating_point else _int_power, a, b, rt), rt)


def _int_power(x: Any, y: Any) -> Any:
    """numpy's power, but an integer to a negative power is what C gives (1, -1 or 0), as in torch."""
    if not (np.asarray(y) < 0).any():
        return np.power(x, y)
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    out = np.power(x, np.maximum(y, 0))
    odd = (y % 2) == 1
    return np.where(y >= 0, out, np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0))).astype(out.dtype)


def compare(name: str, a: Any, b: Any) -> Tensor:
    rt = D.result_type(a, b)
    return wrap(_apply(_COMPARE[name], a, b, rt, quiet=False))


def bitwise(name: str, a: Any, b: Any) -> Tensor:
    rt = D.result_type(a, b)
    if rt.is_floating_point:
        raise NotImplementedError(f'"bitwise_{name}_cpu" not implemented for \'{_NAMES[rt]}\'')
    return _result(_apply(_BITWISE[name], a, b, rt), rt)


def bitwise_not(t: Tensor) -> Tensor:
    if t._a.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return wrap(np.invert(t._a))


def neg(t: Tensor) -> Tensor:
    if t._a.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    return wrap(np.negative(t._a))


def abs(t: Tensor) -> Tensor:  # noqa: A001
    if t._a.dtype == np.bool_:
        raise NotImplementedError('"abs_cpu" not implemented for \'Bool\'')
    return wrap(np.abs(t._a))


def _float_unary(fn: Any, t: Tensor) -> Tensor:
    """Math that gives floats: integer and bool tensors are computed as float32."""
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a Tensor, got {type(t).__name__}")
    a = t._a if t._a.dtype.kind == "f" else t._a.astype(np.float32)
    with np.errstate(all="ignore"):
        return wrap(fn(a))


def exp(t: Tensor) -> Tensor:
    return _float_unary(np.exp, t)


def log(t: Tensor) -> Tensor:
    return _float_unary(np.log, t)


def sqrt(t: Tensor) -> Tensor:
    return _float_unary(np.sqrt, t)


def rsqrt(t: Tensor) -> Tensor:
    return _float_unary(lambda a: 1 / np.sqrt(a), t)


def sin(t: Tensor) -> Tensor:
    return _float_unary(np.sin, t)


def cos(t: Tensor) -> Tensor:
    return _float_unary(np.cos, t)


def silu(t: Tensor) -> Tensor:
    """x * sigmoid(x) (silu), computed as torch does, x / (1 + exp(-x)); floats only."""
    if t._a.dtype.kind != "f":
        raise NotImplementedError(f"\"silu_cpu\" not implemented for '{_NAMES[t.dtype]}'")
    return _float_unary(lambda a: a / (1 + np.exp(-a)), t)


def clamp(t: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    bounds = [x for x in (min, max) if x is not None]
    rt = D.result_type(t, *bounds)
    out = t._a.astype(D.to_numpy(rt))
    try:
        if min is not None:
            out = np.maximum(out, _operands(min, 0, rt)[0])
        if max is not None:
            out = np.minimum(out, _operands(max, 0, rt)[0])
    except ValueError:
        raise _broadcast_error(t, min if min is not None else max) from None
    return _result(out, rt)


def _tensors(fn: str, a: Any, b: Any) -> None:
    for name, x in (("input", a), ("other", b)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def maximum(a: Tensor, b: Tensor) -> Tensor:
    _tensors("maximum", a, b)
    rt = D.result_type(a, b)
    return _result(_apply(np.maximum, a, b, rt), rt)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    _tensors("minimum", a, b)
    rt = D.result_type(a, b)
    return _result(_apply(np.minimum, a, b, rt), rt)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition._a.dtype != np.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_NAMES.get(getattr(condition, 'dtype', None), type(condition).__name__)}")
    if input is None and other is None:
        from ._index import nonzero

        return nonzero(condition, as_tuple=True)
    rt = D.result_type(input, other)
    nt = D.to_numpy(rt)
    x, y = (v._a.astype(nt, copy=False) if isinstance(v, Tensor) else np.asarray(v, dtype=nt) for v in (input, other))
    try:
        return wrap(np.where(condition._a, x, y))
    except ValueError:
        raise _broadcast_error(input, other) from None


def isclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    _tensors("isclose", a, b)
    if a._a.dtype != b._a.dtype:
        raise RuntimeError(f"{_NAMES[a.dtype]} did not match {_NAMES[b.dtype]}")
    if a._a.dtype == np.bool_:
        return compare("eq", a, b)
    try:
        return wrap(np.isclose(a._a, b._a, rtol=rtol, atol=atol, equal_nan=equal_nan))
    except ValueError:
        raise _broadcast_error(a, b) from None


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(isclose(a, b, rtol, atol, equal_nan)._a.all())


def equal(a: Tensor, b: Tensor) -> bool:
    """Same shape and the same values (dtypes may differ, as in torch)."""
    _tensors("equal", a, b)
    return a._a.shape == b._a.shape and bool(np.array_equal(a._a, b._a))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    _tensors("matmul", a, b)
    if a._a.ndim == 0 or b._a.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a._a.ndim}D and {b._a.ndim}D")
    if a._a.dtype != b._a.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_NAMES[a.dtype].lower()} != "
                           f"{_NAMES[b.dtype].lower()}")
    if a._a.dtype == np.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    try:
        return wrap(np.matmul(a._a, b._a))
    except ValueError:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({list(a.shape)} and {list(b.shape)})") from None


def inplace(t: Tensor, result: Tensor) -> Tensor:
    """Write an out-of-place result back into t (a += b): torch refuses a float result in an int tensor."""
    if D.category(result.dtype) > D.category(t.dtype):
        raise RuntimeError(f"result type {_NAMES[result.dtype]} can't be cast to the desired output type "
                           f"{_NAMES[t.dtype]}")
    if result._a.shape != t._a.shape:
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    np.copyto(t._a, result._a, casting="unsafe")
    return t

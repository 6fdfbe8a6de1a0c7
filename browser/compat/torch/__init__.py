"""A numpy `torch` for the browser: exactly the subset of PyTorch that minisgl's CPU path, the judge and the
exercises use, with torch's semantics (views share memory, 0-d tensors stay tensors, torch's dtype promotion,
data_ptr, named tuples from sort/topk/max). Anything else raises NotImplementedError naming it.
See browser/README.md for what differs from PyTorch."""

from __future__ import annotations

import builtins as _builtins
import os as _os
from typing import Any as _Any

import numpy as _np

from . import cuda, nn, return_types  # noqa: I001
from ._creation import arange, empty, empty_like, full, full_like, ones, ones_like, tensor, zeros, zeros_like
from ._device import device
from ._dtype import (
    bfloat16,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from ._dtype import (
    bool_ as bool,  # noqa: A001 - torch's names
)
from ._grad import inference_mode, is_inference_mode_enabled, no_grad
from ._index import gather, nonzero
from ._ops import (
    abs,  # noqa: A004
    allclose,
    clamp,
    cos,
    equal,
    exp,
    isclose,
    log,
    matmul,
    maximum,
    minimum,
    rsqrt,
    sin,
    sqrt,
    where,
)
from ._random import Generator, default_generator, manual_seed, multinomial
from ._reduce import argmax, argsort, cumsum, max, mean, min, softmax, sort, sum, topk  # noqa: A004
from ._shape import cat, flip, repeat_interleave, stack
from ._size import Size
from ._tensor import Tensor  # first: the modules below build on it
from ._unsupported import missing as _missing

__version__ = f"2.13.0+numpy{_np.__version__}"  # the torch API it follows, and the numpy it runs on

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16

_threads = [_os.cpu_count() or 1]


def get_num_threads() -> _builtins.int:
    return _threads[0]


def set_num_threads(n: _builtins.int) -> None:
    """numpy here computes on one thread whatever is asked; the number is kept for get_num_threads."""
    if isinstance(n, _builtins.bool) or not isinstance(n, _builtins.int) or n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _threads[0] = n


__all__ = [
    "Generator", "Size", "Tensor", "abs", "allclose", "arange", "argmax", "argsort", "bfloat16", "bool", "cat",
    "clamp", "cos", "cuda", "cumsum", "default_generator", "device", "double", "dtype", "empty", "empty_like",
    "equal", "exp", "flip", "float", "float16", "float32", "float64", "full", "full_like", "gather",
    "get_num_threads", "half", "inference_mode", "int", "int16", "int32", "int64", "int8",
    "is_inference_mode_enabled", "isclose", "log", "long", "manual_seed", "matmul", "max", "maximum", "mean", "min",
    "minimum", "multinomial", "nn", "no_grad", "nonzero", "ones", "ones_like", "repeat_interleave", "return_types",
    "rsqrt", "set_num_threads", "short", "sin", "softmax", "sort", "sqrt", "stack", "sum", "tensor", "topk",
    "uint8", "where", "zeros", "zeros_like",
]


def __getattr__(name: str) -> _Any:
    if name.startswith("_"):
        raise AttributeError(name)
    raise _missing(f"torch.{name}")

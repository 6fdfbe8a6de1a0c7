"""torch.Generator, Tensor.exponential_ and torch.multinomial on torch's own CPU stream: the same seed gives the same
draws as real torch, bit for bit.

torch's CPU generator is MT19937 seeded like numpy's legacy seeding (the seed's low 32 bits); a double is 53 bits of
``(first draw << 32) | second draw``; an exponential is ``-1 / lambd * log1p(-u)`` in double, then cast. multinomial
(one sample, or several without replacement) is torch's: ``argmax`` (``topk``) of ``p / q`` with
``q = empty_like(p).exponential_(1)``, one draw per element in memory order."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from . import _device
from ._reduce import stable_order
from ._tensor import Tensor, wrap
from ._unsupported import missing

DEFAULT_SEED = 67280421310721  # torch's default_rng_seed_val: the seed of a new Generator
_MT_N = 624


def _mt_key(seed: int) -> np.ndarray:
    """MT19937's init_genrand(seed & 0xffffffff): the state torch's CPUGeneratorImpl starts from."""
    key = [seed & 0xFFFFFFFF]
    for j in range(1, _MT_N):
        k = key[-1]
        key.append((1812433253 * (k ^ (k >> 30)) + j) & 0xFFFFFFFF)
    return np.array(key, dtype=np.uint32)


class Generator:
    __module__ = "torch"

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _device.check(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        if not -2**63 <= seed < 2**64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed % 2**64  # a negative seed is read as unsigned, as torch does
        self._mt = np.random.MT19937(0)
        self._mt.state = {"bit_generator": "MT19937", "state": {"key": _mt_key(self._seed), "pos": _MT_N}}
        return self

    def initial_seed(self) -> int:
        return self._seed

    def _doubles(self, n: int) -> np.ndarray:
        """n uniform doubles in [0, 1): torch's uniform_real_distribution<double>, one random64() each."""
        raw = self._mt.random_raw(2 * n).reshape(n, 2) if n else np.zeros((0, 2), dtype=np.uint64)
        r64 = (raw[:, 0] << np.uint64(32)) | raw[:, 1]
        return (r64 & np.uint64(2**53 - 1)).astype(np.float64) * 2.0**-53


default_generator = Generator().manual_seed(int.from_bytes(os.urandom(8), "little"))  # as torch: a random seed


def manual_seed(seed: int) -> Generator:
    return default_generator.manual_seed(seed)


def _in_memory_order(a: np.ndarray) -> np.ndarray:
    """A view of a whose C order is the order of a's elements in memory (torch's TensorIterator fills so)."""
    return a.transpose(np.argsort([-s for s in a.strides], kind="stable")) if a.ndim > 1 else a


def exponential_(t: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    a = t._a
    if a.dtype.kind != "f":
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {t.dtype}")
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = (default_generator if generator is None else generator)._doubles(a.size)
    if a.dtype == np.float64:  # the C library's log1p, as torch's kernel (numpy's may differ in the last bit)
        e = np.array([math.log1p(-x) for x in u.tolist()], dtype=np.float64)
    else:  # rounded to float32 (then to float16, as c10::Half is made from a float): numpy's log1p suffices
        e = np.log1p(-u)
    e *= -1.0 / lambd
    dest = _in_memory_order(a)
    dest[...] = e.astype(np.float32 if a.dtype == np.float16 else a.dtype).reshape(dest.shape)
    return t


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator: Generator | None = None, out: Any = None) -> Tensor:
    if out is not None:
        raise missing("torch.multinomial(out=...)")
    p = input._a
    if p.dtype.kind != "f":
        raise RuntimeError("multinomial only supports floating-point dtypes for input")
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if replacement and num_samples > 1:
        raise missing("torch.multinomial(replacement=True) with more than one sample")
    with np.errstate(invalid="ignore"):
        if not (p.size and p.max() < np.inf and p.min() >= 0):  # nan fails both
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p.reshape(-1, p.shape[-1]).sum(axis=1) == 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    q = exponential_(wrap(np.empty_like(p)), 1.0, generator=generator)._a
    with np.errstate(all="ignore"):
        keys = p / q  # in p's dtype, as torch's div_out(q, self, q)
    if num_samples == 1:
        return wrap(np.argmax(keys, axis=-1, keepdims=True).astype(np.int64))  # the first maximum, as torch
    order = stable_order(keys, keys.ndim - 1, descending=True)  # topk; ties (zeros, past the support) by position
    return wrap(order[..., :num_samples].astype(np.int64))

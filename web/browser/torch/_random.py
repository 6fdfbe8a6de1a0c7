"""torch.Generator and torch.multinomial on numpy's PCG64.

Reproducible, not torch's stream: the same seed gives the same draws here in every run (and in Pyodide), but
not the draws real torch makes. Each Generator is its own stream, so a request with its own seeded generator
samples the same tokens whatever else is in its batch. multinomial uses torch's algorithms: without
replacement (or one sample), argmax / top-k of p / E with E ~ Exp(1) per category; with replacement, the
inverse of the cumulative distribution."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import _device
from ._tensor import Tensor, wrap
from ._unsupported import missing

DEFAULT_SEED = 67280421310721  # torch's default_rng_seed_val: the seed of a new Generator


class Generator:
    __module__ = "torch"

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _device.check(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        self._seed = seed
        self._bits = np.random.PCG64(seed % 2**64)
        return self

    def initial_seed(self) -> int:
        return self._seed

    def _uniform(self, shape: tuple[int, ...]) -> np.ndarray:
        """Doubles strictly inside (0, 1), from the raw 64-bit stream (stable across numpy versions)."""
        n = int(np.prod(shape, dtype=np.int64))
        raw = self._bits.random_raw(n) if n else np.zeros(0, dtype=np.uint64)
        return (((raw >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53).reshape(shape)


default_generator = Generator().manual_seed(int.from_bytes(os.urandom(8), "little"))  # as torch: a random seed


def manual_seed(seed: int) -> Generator:
    return default_generator.manual_seed(seed)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,  # noqa: A002
                generator: Generator | None = None, out: Any = None) -> Tensor:
    if out is not None:
        raise missing("torch.multinomial(out=...)")
    gen = default_generator if generator is None else generator
    p = input._a
    if p.dtype.kind != "f":
        raise RuntimeError("multinomial only supports floating-point dtypes for input")
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n_cat = p.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p2 = p.reshape(-1, n_cat).astype(np.float64)
    if not np.isfinite(p2).all() or (p2 < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p2.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement or num_samples == 1:
        keys = p2 / -np.log(gen._uniform(p2.shape))  # p / E, E ~ Exp(1) > 0: a zero p is never above a positive one
        order = np.argsort(-keys, axis=1, kind="stable")
        picked = order[:, :num_samples]
    else:
        cdf = np.cumsum(p2, axis=1)
        cdf /= cdf[:, -1:]
        u = gen._uniform((p2.shape[0], num_samples))
        picked = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)])
        picked = np.minimum(picked, n_cat - 1)
    return wrap(picked.astype(np.int64).reshape(p.shape[:-1] + (num_samples,)))

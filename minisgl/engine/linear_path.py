"""The CPU's fast linear path, chosen once at engine start-up.

PyTorch's default F.linear on a CPU runs MKL's generic GEMV/GEMM, which on some CPUs reads the weights at half the
memory bandwidth for the small batches of a decode step. Two other layouts of the same weights are candidates:

- "transposed": W^T stored contiguous ([in, out]), y = x @ W^T (a different BLAS path, often faster for one row);
- "onednn": the weight prepacked once by oneDNN (torch.ops.mkldnn._reorder_linear_weight), applied with
  torch.ops.mkldnn._linear_pointwise.

At start-up ("auto") every candidate is checked against F.linear on the model's own weights (equal within float
tolerance), then timed against it on a pass over the model's linears (a sample of each shape, scaled to all of them),
once for one row (batch-1 decode) and once for a small batch; each size class takes the fastest, and a candidate must
beat the default by a margin to be taken. The choice is logged once (MINISGL_LOG_LEVEL=INFO). Only on a CPU, only
float32, only with real PyTorch (never with the browser's numpy torch), and only for a model big enough that its
weights stream from memory: a tiny test model keeps the default. A named backend is used as asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F

from minisgl.engine.config import LINEAR_BACKENDS
from minisgl.layers import BaseOP, Linear, LMHead
from minisgl.layers.linear import FastLinear, PreparedLinear
from minisgl.utils import init_logger

logger = init_logger(__name__)

SMALL_ROWS = 4  # batches of fewer rows than this use the one-row choice; the rest the batched one
_MARGIN = 0.95  # a candidate must take at most this share of the default's time to be chosen
_TIMED_ROWS = (1, 8)  # the one-row and the batched size class, as timed
_REPEATS = 2
_MIN_AUTO_BYTES = 32 << 20  # auto on a model with fewer bytes of linear weights: the default (they sit in caches)
_SAMPLE_BYTES = 24 << 20  # weights timed per distinct shape: enough to stream from memory, not from a cache

Maker = Callable[[torch.Tensor, torch.Tensor | None], FastLinear]


def _default(w: torch.Tensor, b: torch.Tensor | None) -> FastLinear:
    return lambda x: F.linear(x, w, b)


def _transposed(w: torch.Tensor, b: torch.Tensor | None) -> FastLinear:
    wt = w.t().contiguous()  # [in, out]: y = x @ wt
    if b is None:
        return lambda x: torch.mm(x, wt) if x.dim() == 2 else torch.matmul(x, wt)
    return lambda x: torch.addmm(b, x, wt) if x.dim() == 2 else torch.matmul(x, wt) + b


def _onednn(w: torch.Tensor, b: torch.Tensor | None) -> FastLinear:
    packed = torch.ops.mkldnn._reorder_linear_weight(w, None)  # None: packed for any batch size
    op = torch.ops.mkldnn._linear_pointwise
    return lambda x: op(x, packed, b, "none", [], "")


MAKERS: dict[str, Maker] = {"default": _default, "transposed": _transposed, "onednn": _onednn}


def _real_torch() -> bool:
    """False under the browser's numpy stand-in for torch, which has neither torch.backends nor torch.ops."""
    return hasattr(torch, "backends") and hasattr(torch, "ops")


def _available(kind: str) -> bool:
    if kind == "onednn":
        try:
            return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        except (AttributeError, RuntimeError):
            return False
    return True


def model_linears(op: BaseOP) -> Iterator[Linear | LMHead]:
    """Every Linear and LMHead of the model, in forward order (public attributes, depth first)."""
    for _, child in op._children():
        if isinstance(child, (Linear, LMHead)):
            yield child
        elif isinstance(child, BaseOP):
            yield from model_linears(child)


def weights_of(layer: Linear | LMHead) -> tuple[torch.Tensor, torch.Tensor | None]:
    if isinstance(layer, LMHead):
        return layer._weight, None
    return layer.weight, layer.bias


class Dispatch:
    """One kernel for small batches (fewer than SMALL_ROWS rows), another for the rest."""

    def __init__(self, small: FastLinear, large: FastLinear) -> None:
        self.small, self.large = small, large

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return (self.small if x.shape[0] < SMALL_ROWS else self.large)(x)


def _agrees(kernel: FastLinear, w: torch.Tensor, b: torch.Tensor | None, gen: torch.Generator) -> bool:
    for rows in (1, 5):
        x = torch.randn(rows, w.shape[1], generator=gen, dtype=w.dtype)
        want, got = F.linear(x, w, b), kernel(x)
        tol = 1e-5 * float(want.abs().max()) + 1e-6
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-4, atol=tol):
            return False
    return True


Built = dict[str, dict[int, FastLinear]]  # kind -> layer index -> kernel


def sample_layers(weights: list[tuple[torch.Tensor, torch.Tensor | None]]) -> list[tuple[list[int], float]]:
    """The layers timed: per distinct shape, the first ones in forward order up to _SAMPLE_BYTES of weights (all of
    a smaller group), each group with the factor that scales its time to all of its members."""
    groups: dict[tuple[int, int, bool], list[int]] = {}
    for i, (w, b) in enumerate(weights):
        groups.setdefault((w.shape[0], w.shape[1], b is not None), []).append(i)
    out = []
    for members in groups.values():
        taken, nbytes = [], 0
        for i in members:
            if nbytes >= _SAMPLE_BYTES:
                break
            taken.append(i)
            nbytes += weights[i][0].numel() * weights[i][0].element_size()
        out.append((taken, len(members) / len(taken)))
    return out


def _time_pass(kernels: dict[int, FastLinear], sample: list[tuple[list[int], float]],
               inputs: dict[int, torch.Tensor]) -> float:
    """Seconds a pass over every linear would take, estimated from the sampled ones."""
    total = 0.0
    for members, scale in sample:
        t = time.perf_counter()
        for i in members:
            kernels[i](inputs[i])
        total += (time.perf_counter() - t) * scale
    return total


def choose(layers: list[Linear | LMHead], kinds: list[str]) -> tuple[str, str, dict[str, list[float]], Built]:
    """(one-row kind, batched kind, seconds per pass of each kind at each timed size, the kernels built) for these
    layers' own weights."""
    gen = torch.Generator().manual_seed(0)
    weights = [weights_of(layer) for layer in layers]
    sample = sample_layers(weights)
    timed = [i for members, _ in sample for i in members]
    built: Built = {}
    for kind in kinds:
        try:
            kernels = {i: MAKERS[kind](*weights[i]) for i in timed}
            if all(_agrees(kernels[members[0]], *weights[members[0]], gen) for members, _ in sample):
                built[kind] = kernels  # equal to F.linear on one layer of every shape
            else:
                logger.warning(f"linear path {kind!r} differs from F.linear on this machine: not used")
        except (RuntimeError, AttributeError, NotImplementedError) as e:
            logger.warning(f"linear path {kind!r} is not usable here ({e}): not used")
    best: dict[str, list[float]] = {kind: [float("inf")] * len(_TIMED_ROWS) for kind in built}
    with torch.inference_mode():
        for j, rows in enumerate(_TIMED_ROWS):
            inputs = {i: torch.randn(rows, weights[i][0].shape[1], generator=gen, dtype=weights[i][0].dtype)
                      for i in timed}
            for kind in built:  # warm-up: first calls allocate and pick kernels
                _time_pass(built[kind], sample, inputs)
            for _ in range(_REPEATS):  # interleaved, so a slow spell of the machine hits every candidate
                for kind in built:
                    best[kind][j] = min(best[kind][j], _time_pass(built[kind], sample, inputs))
    picks = []
    for j in range(len(_TIMED_ROWS)):
        pick = min(best, key=lambda k: best[k][j])
        if pick != "default" and best[pick][j] > _MARGIN * best["default"][j]:
            pick = "default"  # not clearly faster: the noise of one measurement is not a reason to switch
        picks.append(pick)
    return picks[0], picks[1], best, built


def install_linear_path(model: BaseOP, backend: str, device: torch.device, dtype: torch.dtype) -> str:
    """Choose and bind the linear path of every Linear and LMHead of a loaded model; returns what was chosen."""
    if backend not in LINEAR_BACKENDS:
        raise ValueError(f"linear_backend must be one of {', '.join(LINEAR_BACKENDS)}; got {backend!r}")
    layers = list(model_linears(model))
    for layer in layers:
        layer._fast = None
    if backend == "default":
        return "default"
    if device.type != "cpu" or dtype != torch.float32 or not _real_torch():
        if backend != "auto":
            logger.warning(f"linear_backend {backend!r} is CPU and float32 only: the default path is used")
        return "default"
    if backend != "auto":
        if not _available(backend):
            raise ValueError(f"linear_backend {backend!r} is not available in this PyTorch build")
        small = large = backend
        built: Built = {}
        summary = f"linear path {backend!r} (asked for)"
    elif sum(w.numel() * w.element_size() for w, _ in map(weights_of, layers)) < _MIN_AUTO_BYTES:
        logger.info("linear path: default (the model's linear weights are too small for the choice to matter)")
        return "default"
    else:
        kinds = [k for k in MAKERS if _available(k)]
        t0 = time.perf_counter()
        small, large, best, built = choose(layers, kinds)
        times = "; ".join(f"{k} " + "/".join(f"{s * 1e3:.2f}" for s in v) for k, v in best.items())
        summary = (f"linear path: {small!r} below {SMALL_ROWS} rows, {large!r} from {SMALL_ROWS} rows "
                   f"(ms per pass over the model's linears at {'/'.join(map(str, _TIMED_ROWS))} rows: {times}; "
                   f"chosen in {time.perf_counter() - t0:.2f} s)")
    logger.info(summary)
    if small == large == "default":
        return "default"
    for kind in set(built) - {small, large}:
        del built[kind]  # the copies of the weights no choice uses are freed
    for i, layer in enumerate(layers):
        w, b = weights_of(layer)
        pair = [built[k][i] if i in built.get(k, {}) else MAKERS[k](w, b) for k in (small, large)]
        kernel = pair[0] if small == large else Dispatch(pair[0], pair[1])
        layer._fast = PreparedLinear(w, b, kernel)
    return small if small == large else f"{small}+{large}"

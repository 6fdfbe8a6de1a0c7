"""The CPU's fast linear path, chosen once at engine start-up.

PyTorch's default F.linear on a CPU runs MKL's generic GEMV/GEMM, which on some CPUs reads the weights at half the
memory bandwidth for the small batches of a decode step. Two other layouts of the same weights are candidates:

- "transposed": W^T stored contiguous ([in, out]), y = x @ W^T (a different BLAS path, often faster for one row);
- "onednn": the weight prepacked once by oneDNN (torch.ops.mkldnn._reorder_linear_weight), applied with
  torch.ops.mkldnn._linear_pointwise.

At start-up every candidate is checked against F.linear on the model's own weights (equal within float tolerance),
then timed against it on a pass over all the model's linears, once for one row (batch-1 decode) and once for a small
batch; each size class takes the fastest, and a candidate must beat the default by a margin to be taken. The choice
is logged once. Only on a CPU, only float32, only with real PyTorch (never with the browser's numpy torch).
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


def _weights(layer: Linear | LMHead) -> tuple[torch.Tensor, torch.Tensor | None]:
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


def _time_pass(kernels: list[FastLinear], inputs: list[torch.Tensor]) -> float:
    t = time.perf_counter()
    for kernel, x in zip(kernels, inputs):
        kernel(x)
    return time.perf_counter() - t


Built = dict[str, list[FastLinear]]


def choose(layers: list[Linear | LMHead], kinds: list[str]) -> tuple[str, str, dict[str, list[float]], Built]:
    """(one-row kind, batched kind, best seconds per kind and timed size, the kernels built) for these layers'
    own weights."""
    gen = torch.Generator().manual_seed(0)
    weights = [_weights(layer) for layer in layers]
    built: Built = {}
    for kind in kinds:
        try:
            kernels = [MAKERS[kind](w, b) for w, b in weights]
            checked: dict[tuple[int, int, bool], bool] = {}
            for kernel, (w, b) in zip(kernels, weights):  # one check per distinct shape
                key = (w.shape[0], w.shape[1], b is not None)
                if key not in checked:
                    checked[key] = _agrees(kernel, w, b, gen)
            if all(checked.values()):
                built[kind] = kernels
            else:
                logger.warning(f"linear path {kind!r} differs from F.linear on this machine: not used")
        except (RuntimeError, AttributeError, NotImplementedError) as e:
            logger.warning(f"linear path {kind!r} is not usable here ({e}): not used")
    best: dict[str, list[float]] = {kind: [float("inf")] * len(_TIMED_ROWS) for kind in built}
    with torch.inference_mode():
        for i, rows in enumerate(_TIMED_ROWS):
            inputs = [torch.randn(rows, w.shape[1], generator=gen, dtype=w.dtype) for w, _ in weights]
            for kind in built:  # warm-up: first calls allocate and pick kernels
                _time_pass(built[kind], inputs)
            for _ in range(_REPEATS):  # interleaved, so a slow spell of the machine hits every candidate
                for kind in built:
                    best[kind][i] = min(best[kind][i], _time_pass(built[kind], inputs))
    picks = []
    for i in range(len(_TIMED_ROWS)):
        pick = min(best, key=lambda k: best[k][i])
        if pick != "default" and best[pick][i] > _MARGIN * best["default"][i]:
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
        w, b = _weights(layer)
        pair = [built[k][i] if k in built else MAKERS[k](w, b) for k in (small, large)]
        kernel = pair[0] if small == large else Dispatch(pair[0], pair[1])
        layer._fast = PreparedLinear(w, b, kernel)
    return small if small == large else f"{small}+{large}"

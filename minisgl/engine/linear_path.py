"""The CPU's fast linear path, chosen once at engine start-up.

PyTorch's default F.linear on a CPU runs MKL's generic GEMV/GEMM, which on some CPUs reads the weights at half the
memory bandwidth for the small batches of a decode step. Two other layouts of the same weights are candidates:

- "transposed": W^T stored contiguous ([in, out]), y = x @ W^T (a different BLAS path, often faster for one row);
- "onednn": the weight prepacked once by oneDNN (torch.ops.mkldnn._reorder_linear_weight), applied with
  torch.ops.mkldnn._linear_pointwise; "onednn16" packs it for batches of 16 rows (right for any, fastest near 16);
- "mkl1": MKL's packed GEMM for one row (torch.ops.mkl._mkl_linear; other rows run on the weight itself).

At start-up ("auto") every candidate is checked against F.linear on the model's own weights (equal within float
tolerance), then timed against it on the model's linears (a sample of each shape, scaled to all of them), once for
one row (batch-1 decode) and once for a small batch; each shape and size class takes the fastest, and a candidate
must beat the default by a margin to be taken. The choice is logged once (MINISGL_LOG_LEVEL=INFO). Only on a CPU, only
float32, only with real PyTorch (never with the browser's numpy torch), and only for a model big enough that its
weights stream from memory: a tiny test model keeps the default. A named backend is used as asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from minisgl.engine.config import LINEAR_BACKENDS
from minisgl.layers import BaseOP, Linear, LMHead
from minisgl.layers.linear import FastLinear, PreparedLinear
from minisgl.utils import init_logger

logger = init_logger(__name__)

# the size classes: a batch of r rows uses class j when BOUNDS[j-1] <= r < BOUNDS[j]; each is timed at _TIMED_ROWS[j]
BOUNDS = (4, 32)
_MARGIN = 0.95  # a candidate must take at most this share of the default's time to be chosen
_TIMED_ROWS = (1, 16, 64)  # one row (batch-1 decode), a decode batch, a big batch (prefill and large decodes)
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


def _onednn(hint: int | None) -> Maker:
    def make(w: torch.Tensor, b: torch.Tensor | None) -> FastLinear:
        packed = torch.ops.mkldnn._reorder_linear_weight(w, hint)  # a layout for batches of hint rows (None: any)
        op = torch.ops.mkldnn._linear_pointwise
        return lambda x: op(x, packed, b, "none", [], "")  # right for any rows; fastest near the hint

    return make


def _mkl_one_row(w: torch.Tensor, b: torch.Tensor | None) -> FastLinear:
    packed = torch.ops.mkl._mkl_reorder_linear_weight(w, 1)
    op = torch.ops.mkl._mkl_linear
    return lambda x: op(x, packed, w, b, 1)  # MKL's packed GEMM for one row; other rows run on w itself


MAKERS: dict[str, Maker] = {"default": _default, "transposed": _transposed, "onednn": _onednn(None),
                            "onednn16": _onednn(16), "mkl1": _mkl_one_row}


def _real_torch() -> bool:
    """False under the browser's numpy stand-in for torch, which has neither torch.backends nor torch.ops."""
    return hasattr(torch, "backends") and hasattr(torch, "ops")


def _available(kind: str) -> bool:
    try:
        if kind.startswith("onednn"):
            return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        if kind == "mkl1":
            return bool(torch.backends.mkl.is_available()) and hasattr(torch.ops.mkl, "_mkl_linear")
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
    """One kernel per size class of the batch (its rows), as BOUNDS divides them."""

    def __init__(self, kernels: list[FastLinear]) -> None:
        assert len(kernels) == len(BOUNDS) + 1
        self.kernels = kernels

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        return self.kernels[0 if rows < BOUNDS[0] else 1 if rows < BOUNDS[1] else 2](x)


def _agrees(kernel: FastLinear, w: torch.Tensor, b: torch.Tensor | None, gen: torch.Generator) -> bool:
    for rows in (1, 5, 17):
        x = torch.randn(rows, w.shape[1], generator=gen, dtype=w.dtype)
        want, got = F.linear(x, w, b), kernel(x)
        tol = 1e-5 * float(want.abs().max()) + 1e-6
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-4, atol=tol):
            return False
    return True


Built = dict[str, dict[int, FastLinear]]  # kind -> layer index -> kernel
Shape = tuple[int, int, bool]  # (out, in, has bias)


@dataclass
class Group:
    """The layers of one shape; the first of them up to _SAMPLE_BYTES of weights (all of a smaller group) are timed,
    and their time is scaled to all of them."""

    shape: Shape
    members: list[int]
    timed: list[int]

    @property
    def scale(self) -> float:
        return len(self.members) / len(self.timed)


def group_layers(weights: list[tuple[torch.Tensor, torch.Tensor | None]]) -> list[Group]:
    members: dict[Shape, list[int]] = {}
    for i, (w, b) in enumerate(weights):
        members.setdefault((w.shape[0], w.shape[1], b is not None), []).append(i)
    groups = []
    for shape, idx in members.items():
        timed, nbytes = [], 0
        for i in idx:
            if nbytes >= _SAMPLE_BYTES:
                break
            timed.append(i)
            nbytes += weights[i][0].numel() * weights[i][0].element_size()
        groups.append(Group(shape, idx, timed))
    return groups


def _time_group(kernels: dict[int, FastLinear], group: Group, inputs: dict[int, torch.Tensor]) -> float:
    """Seconds the whole group would take, estimated from its timed layers."""
    t = time.perf_counter()
    for i in group.timed:
        kernels[i](inputs[i])
    return (time.perf_counter() - t) * group.scale


@dataclass
class Choice:
    picks: dict[Shape, tuple[str, ...]]  # per shape: the kind of each size class
    seconds: dict[str, list[float]]  # per kind: a pass over all the linears, at each timed size, each shape's best
    built: Built  # the kernels made for timing, reused by install_linear_path
    groups: list[Group]


def choose(layers: list[Linear | LMHead], kinds: list[str]) -> Choice:
    """Per shape and size class the fastest kind that agrees with F.linear on these layers' own weights."""
    gen = torch.Generator().manual_seed(0)
    weights = [weights_of(layer) for layer in layers]
    groups = group_layers(weights)
    timed = [i for g in groups for i in g.timed]
    built: Built = {}
    for kind in kinds:
        try:
            kernels = {i: MAKERS[kind](*weights[i]) for i in timed}
            if all(_agrees(kernels[g.timed[0]], *weights[g.timed[0]], gen) for g in groups):
                built[kind] = kernels  # equal to F.linear on one layer of every shape
            else:
                logger.warning(f"linear path {kind!r} differs from F.linear on this machine: not used")
        except (RuntimeError, AttributeError, NotImplementedError) as e:
            logger.warning(f"linear path {kind!r} is not usable here ({e}): not used")
    best = {(kind, g.shape, j): float("inf") for kind in built for g in groups for j in range(len(_TIMED_ROWS))}
    with torch.inference_mode():
        for j, rows in enumerate(_TIMED_ROWS):
            inputs = {i: torch.randn(rows, weights[i][0].shape[1], generator=gen, dtype=weights[i][0].dtype)
                      for i in timed}
            for kind in built:  # warm-up: first calls allocate and pick kernels
                for g in groups:
                    _time_group(built[kind], g, inputs)
            for _ in range(_REPEATS):  # interleaved, so a slow spell of the machine hits every candidate
                for g in groups:
                    for kind in built:
                        key = (kind, g.shape, j)
                        best[key] = min(best[key], _time_group(built[kind], g, inputs))
    picks: dict[Shape, tuple[str, ...]] = {}
    for g in groups:
        pair = []
        for j in range(len(_TIMED_ROWS)):
            pick = min(built, key=lambda k: best[(k, g.shape, j)])
            if pick != "default" and best[(pick, g.shape, j)] > _MARGIN * best[("default", g.shape, j)]:
                pick = "default"  # not clearly faster: the noise of one measurement is not a reason to switch
            pair.append(pick)
        picks[g.shape] = tuple(pair)
    seconds = {kind: [sum(best[(kind, g.shape, j)] for g in groups) for j in range(len(_TIMED_ROWS))]
               for kind in built}
    return Choice(picks, seconds, built, groups)


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
    groups = group_layers([weights_of(layer) for layer in layers])
    if backend != "auto":
        if not _available(backend):
            raise ValueError(f"linear_backend {backend!r} is not available in this PyTorch build")
        choice = Choice({g.shape: (backend,) * len(_TIMED_ROWS) for g in groups}, {}, {}, groups)
        logger.info(f"linear path {backend!r} (asked for)")
    elif sum(w.numel() * w.element_size() for w, _ in map(weights_of, layers)) < _MIN_AUTO_BYTES:
        logger.info("linear path: default (the model's linear weights are too small for the choice to matter)")
        return "default"
    else:
        t0 = time.perf_counter()
        choice = choose(layers, [k for k in MAKERS if _available(k)])
        rows = "/".join(map(str, _TIMED_ROWS))
        times = "; ".join(f"{k} " + "/".join(f"{t * 1e3:.2f}" for t in v) for k, v in choice.seconds.items())
        logger.info(f"linear path: {describe(choice.picks)} (rows < {BOUNDS[0]} / < {BOUNDS[1]} / more; ms per pass "
                    f"over the model's linears at {rows} rows: {times}; chosen in {time.perf_counter() - t0:.2f} s)")
    used = {kind for pair in choice.picks.values() for kind in pair}
    for kind in set(choice.built) - used:
        del choice.built[kind]  # the copies of the weights no choice uses are freed
    for g in choice.groups:
        kinds = choice.picks[g.shape]
        if set(kinds) == {"default"}:
            continue
        for i in g.members:
            w, b = weights_of(layers[i])
            made = {k: choice.built[k][i] if i in choice.built.get(k, {}) else MAKERS[k](w, b) for k in set(kinds)}
            kernel = made[kinds[0]] if len(made) == 1 else Dispatch([made[k] for k in kinds])
            layers[i]._fast = PreparedLinear(w, b, kernel)
    return describe(choice.picks)


def describe(picks: dict[Shape, tuple[str, ...]]) -> str:
    """'onednn' when one kind serves everything; 'transposed/onednn/default' (a kind per size class) when every
    shape chose alike; else each shape's."""

    def one(kinds: tuple[str, ...]) -> str:
        return kinds[0] if len(set(kinds)) == 1 else "/".join(kinds)

    if len(set(picks.values())) == 1:
        return one(next(iter(picks.values())))
    return ", ".join(f"{o}x{i}{'+b' if b else ''} {one(kinds)}" for (o, i, b), kinds in picks.items())

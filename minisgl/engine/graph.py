"""CUDA Graph: capture one decode forward per batch size, pad a batch to the nearest size, replay.

Every address a captured graph reads is fixed, so every input goes through a fixed buffer: the batch's inputs
through GraphCaptureBuffer, the attention metadata through the backend's capture buffers. On a CPU, EmulatedGraph
stands in for torch.cuda.CUDAGraph and, like it, sees nothing but those buffers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from minisgl.core import Batch, Req, get_global_ctx
from minisgl.utils import get_free_memory, init_logger, is_cuda, synchronize

if TYPE_CHECKING:
    from minisgl.attention.base import BaseAttnBackend
    from minisgl.models.base import BaseLLMModel

logger = init_logger(__name__)

_BIG_DEVICE_BYTES = 80 << 30


def make_graph_bs_list(cuda_graph_bs: list[int] | None, cuda_graph_max_bs: int | None, is_cuda: bool,
                       free_memory: int) -> list[int]:
    """The batch sizes to capture: 1, 2, 4 and every multiple of 8 up to a ceiling; an explicit list wins."""
    if cuda_graph_bs is not None:
        return sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1})
    if cuda_graph_max_bs is None:
        if not is_cuda:
            return []  # graphs are off on a CPU unless asked for
        cuda_graph_max_bs = 256 if free_memory > _BIG_DEVICE_BYTES else 160
    if cuda_graph_max_bs < 1:
        return []
    return [bs for bs in [1, 2, 4, *range(8, cuda_graph_max_bs + 1, 8)] if bs <= cuda_graph_max_bs]


@dataclass
class GraphCaptureBuffer:
    input_ids: torch.Tensor
    out_loc: torch.Tensor
    positions: torch.Tensor
    logits: torch.Tensor

    @classmethod
    def init(cls, bs: int, vocab_size: int, device: torch.device) -> GraphCaptureBuffer:
        return GraphCaptureBuffer(
            input_ids=torch.zeros(bs, dtype=torch.int32, device=device),
            out_loc=torch.zeros(bs, dtype=torch.int32, device=device),
            positions=torch.zeros(bs, dtype=torch.int32, device=device),
            logits=torch.empty(bs, vocab_size, dtype=torch.float32, device=device),
        )

    def set_batch(self, batch: Batch) -> None:
        """At capture: point the batch's input fields at the buffers."""
        s = slice(batch.padded_size)
        batch.input_ids, batch.out_loc, batch.positions = (
            self.input_ids[s], self.out_loc[s], self.positions[s])

    def copy_from(self, batch: Batch) -> None:
        """Before replay: copy the current batch's inputs into the buffers."""
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc
        self.positions[s] = batch.positions


class EmulatedGraph:
    """The CPU stand-in: the same interface as torch.cuda.CUDAGraph's replay."""

    def __init__(self, fn: Callable[[], None], batch: Batch) -> None:
        self.fn, self.batch = fn, batch

    def replay(self) -> None:
        ctx = get_global_ctx()
        saved, ctx._batch = ctx._batch, self.batch  # a real graph reads no Python objects, which this imitates
        try:
            self.fn()
        finally:
            ctx._batch = saved

    def reset(self) -> None:
        self.fn, self.batch = None, None  # type: ignore[assignment]


class GraphRunner:
    def __init__(self, stream: Any, device: torch.device, model: BaseLLMModel, attn_backend: BaseAttnBackend,
                 dummy_req: Req, max_seq_len: int, vocab_size: int, cuda_graph_bs: list[int] | None = None,
                 cuda_graph_max_bs: int | None = None) -> None:
        self.stream, self.device = stream, device
        self.attn_backend, self.dummy_req = attn_backend, dummy_req
        self.graph_map: dict[int, Any] = {}
        self.buffer: GraphCaptureBuffer | None = None
        bs_list = make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda(device),
                                     get_free_memory(device) if is_cuda(device) else 0)
        if bs_list and is_cuda(device) and not attn_backend.supports_cuda_graph:
            logger.warning(f"{type(attn_backend).__name__} cannot be captured in a CUDA graph: graphs are off")
            bs_list = []
        self.graph_bs_list = bs_list  # ascending
        if self.graph_bs_list:
            self._capture_graphs(max_seq_len, vocab_size, model)

    @property
    def max_graph_bs(self) -> int:
        return max(self.graph_bs_list) if self.graph_bs_list else 0

    def can_use_cuda_graph(self, batch: Batch) -> bool:
        return batch.is_decode and batch.size <= self.max_graph_bs

    def _capture_graphs(self, max_seq_len: int, vocab_size: int, model: BaseLLMModel) -> None:
        self.attn_backend.init_capture_graph(max_seq_len=max_seq_len, bs_list=self.graph_bs_list)
        synchronize(self.device)
        logger.info_rank0(f"Capturing graphs for batch sizes {self.graph_bs_list}")
        self.buffer = GraphCaptureBuffer.init(self.max_graph_bs, vocab_size, self.device)
        pool = None
        # record the largest first so the smaller ones reuse its memory pool
        for bs in sorted(self.graph_bs_list, reverse=True):
            batch = Batch(reqs=[self.dummy_req] * bs, phase="decode")
            batch.padded_reqs = batch.reqs
            self.attn_backend.prepare_for_capture(batch)
            self.buffer.set_batch(batch)
            logits = self.buffer.logits[:bs]
            ctx = get_global_ctx()
            with ctx.forward_batch(batch):
                # one warm-up: trigger the lazy initializations so they are not recorded into the graph
                logits.copy_(model.forward())
                if is_cuda(self.device):
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, pool=pool, stream=self.stream):
                        logits.copy_(model.forward())
                    if pool is None:
                        pool = graph.pool()
                else:
                    graph = EmulatedGraph(lambda m=model, lg=logits: lg.copy_(m.forward()), batch)
            self.graph_map[bs] = graph
        logger.info_rank0(f"Free memory after capture: {get_free_memory(self.device) / 2**30:.2f} GiB")

    def pad_batch(self, batch: Batch) -> None:
        """Pad the batch up to the nearest recorded batch size with dummy requests, whose results are discarded."""
        padded = (next(bs for bs in self.graph_bs_list if bs >= batch.size)
                  if self.can_use_cuda_graph(batch) else batch.size)
        batch.padded_reqs = batch.reqs + [self.dummy_req] * (padded - batch.size)

    def replay(self, batch: Batch) -> torch.Tensor:
        assert self.can_use_cuda_graph(batch)
        self.buffer.copy_from(batch)
        self.attn_backend.prepare_for_replay(batch)
        self.graph_map[batch.padded_size].replay()  # type: ignore[attr-defined]
        return self.buffer.logits[: batch.size]

    def destroy_cuda_graphs(self) -> None:
        """Release every graph and the fixed buffers; the runner then runs everything eagerly."""
        for graph in self.graph_map.values():
            graph.reset()
        self.graph_map.clear()
        self.graph_bs_list = []
        self.buffer = None
        self.attn_backend.destroy_capture()
        if is_cuda(self.device):
            torch.cuda.synchronize(self.device)
            torch.cuda.empty_cache()

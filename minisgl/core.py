"""The engine's state: sampling parameters, requests, batches, and the process-wide forward context."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import torch

    from minisgl.attention.base import BaseAttnBackend, BaseAttnMetadata
    from minisgl.kvcache.pool import KVCachePool


@dataclass
class SamplingParams:
    temperature: float = 0.0  # 0 means greedy
    top_k: int = -1  # -1 means no top-k filter
    top_p: float = 1.0
    ignore_eos: bool = False
    max_tokens: int = 16
    seed: int | None = None  # a seed makes sampling reproducible per request

    def validate(self) -> None:
        if not isinstance(self.max_tokens, int) or self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")
        if self.top_k == 0 or self.top_k < -1:
            raise ValueError(f"top_k must be -1 (off) or >= 1, got {self.top_k!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0.0 or self.top_k == 1


@dataclass(eq=False)
class Req:
    """One request. Tokens [0, cached_len) have KV in the cache; [cached_len, device_len) are computed next."""

    input_ids: list[int]  # prompt + generated tokens, on the host
    table_idx: int  # its row in the page table and the token pool
    cached_len: int
    output_len: int  # max new tokens
    uid: int
    sampling_params: SamplingParams = field(default_factory=SamplingParams)
    cache_handle: Any = None  # the prefix cache's handle of the matched (locked) prefix
    generator: Any = None  # torch.Generator for seeded sampling

    def __post_init__(self) -> None:
        self.prompt_len = len(self.input_ids)
        self.device_len = len(self.input_ids)
        self.max_device_len = len(self.input_ids) + self.output_len
        self.matched_len = 0  # prompt tokens reused from the prefix cache (their pages are the cache's)
        self.chunked = False  # this batch computes only part of the prompt: its sampled token is dropped

    @property
    def extend_len(self) -> int:
        return self.device_len - self.cached_len

    @property
    def remain_len(self) -> int:
        return self.max_device_len - self.device_len

    @property
    def can_decode(self) -> bool:
        return self.remain_len > 0

    @property
    def output_ids(self) -> list[int]:
        return self.input_ids[self.prompt_len :]

    def complete_one(self) -> None:
        """After a forward: everything computed is now cached, and one more token is coming (unless chunked)."""
        if self.chunked:
            self.cached_len = self.device_len
            return
        self.cached_len = self.device_len
        self.device_len += 1

    def __repr__(self) -> str:
        return f"Req(uid={self.uid}, row={self.table_idx}, cached={self.cached_len}, device={self.device_len})"


Phase = Literal["prefill", "decode"]


@dataclass(eq=False)
class Batch:
    reqs: list[Req]
    phase: Phase
    padded_reqs: list[Req] = field(default_factory=list)  # reqs + dummy requests up to a graph's size
    input_ids: torch.Tensor | None = None
    positions: torch.Tensor | None = None
    out_loc: torch.Tensor | None = None  # KV slot written by each input token
    attn_metadata: BaseAttnMetadata | None = None

    def __post_init__(self) -> None:
        if not self.padded_reqs:
            self.padded_reqs = self.reqs

    @property
    def size(self) -> int:
        return len(self.reqs)

    @property
    def padded_size(self) -> int:
        return len(self.padded_reqs)

    @property
    def is_prefill(self) -> bool:
        return self.phase == "prefill"

    @property
    def is_decode(self) -> bool:
        return self.phase == "decode"


class Context:
    """What a model's argument-less forward() reads: the current batch, the KV pool, the attention backend."""

    def __init__(self, page_size: int, kv_cache: KVCachePool, attn_backend: BaseAttnBackend) -> None:
        self.page_size = page_size
        self.kv_cache = kv_cache
        self.attn_backend = attn_backend
        self._batch: Batch | None = None

    @property
    def batch(self) -> Batch:
        assert self._batch is not None, "no batch is being forwarded"
        return self._batch

    @contextmanager
    def forward_batch(self, batch: Batch) -> Iterator[None]:
        assert self._batch is None, "forward_batch does not nest"
        self._batch = batch
        try:
            yield
        finally:
            self._batch = None


_GLOBAL_CTX: Context | None = None
_THREAD = threading.local()  # .ctx: the engine of a tensor-parallel rank thread (minisgl/distributed/threads.py)


def own_thread_ctx() -> None:
    """From now on this thread has an engine context of its own (a rank thread), not the process's."""
    _THREAD.ctx = None


def set_global_ctx(ctx: Context | None) -> None:
    global _GLOBAL_CTX
    if hasattr(_THREAD, "ctx"):
        _THREAD.ctx = ctx
    else:
        _GLOBAL_CTX = ctx


def get_global_ctx() -> Context:
    ctx = _THREAD.ctx if hasattr(_THREAD, "ctx") else _GLOBAL_CTX
    assert ctx is not None, "no engine is running in this process"
    return ctx


def new_req(ids: list[int], params: SamplingParams, uid: int, device: torch.device) -> Req:
    """A request as generate() queues it (every tensor-parallel rank makes the same one)."""
    req = Req(input_ids=list(ids), table_idx=-1, cached_len=0, output_len=params.max_tokens, uid=uid,
              sampling_params=params)
    if params.seed is not None and not params.is_greedy:
        import torch  # here: this module imports torch for type checkers only

        req.generator = torch.Generator(device=device).manual_seed(params.seed)
    return req

"""The engine: model, KV pool, page table, attention backend, sampler, the dummy request and the graph runner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from minisgl.attention import ATTENTION_BACKENDS, default_backend
from minisgl.core import Batch, Context, Req, SamplingParams, set_global_ctx
from minisgl.distributed import check_tp_size, get_comm, get_tp, kv_head_range, shard_model
from minisgl.engine.config import EngineConfig
from minisgl.engine.graph import GraphRunner
from minisgl.engine.linear_path import install_linear_path
from minisgl.engine.sample import Sampler
from minisgl.kernel import triton_available
from minisgl.kvcache import PREFIX_CACHES, KVCachePool
from minisgl.kvcache.pool import OWN_STORE_KV, TritonKVCachePool
from minisgl.layers import VocabEmbedding, model_ops
from minisgl.models import ModelConfig, create_model
from minisgl.models.qwen3_moe import SparseMoE
from minisgl.moe import MOE_BACKENDS, default_moe_backend
from minisgl.utils import (
    default_device,
    get_free_memory,
    init_cpu_threads,
    init_logger,
    is_cuda,
    make_event,
    make_stream,
    stream_ctx,
)

logger = init_logger(__name__)

_CPU_DEFAULT_MAX_SEQ_LEN = 4096


@dataclass
class ForwardOutput:
    next_tokens: torch.Tensor  # [bs] int32 on the device
    next_tokens_cpu: torch.Tensor  # the same, copied to the host (wait on copy_done first)
    copy_done: Any


class Engine:
    def __init__(self, config: EngineConfig) -> None:
        config.validate()
        self.config = config
        self.device = torch.device(config.device) if config.device is not None else default_device()
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for, but CUDA is not available")
        # check the cheap things before the expensive ones, so bad input fails fast
        backend_name = config.attention_backend or default_backend(self.device)
        make_backend = ATTENTION_BACKENDS.get(backend_name)
        PREFIX_CACHES.get(config.cache_type)
        run_experts = MOE_BACKENDS.get(config.moe_backend or default_moe_backend(self.device))
        self.model_config = mc = ModelConfig.from_path(config.model_path)
        self.dtype = config.dtype
        if self.device.type == "cpu":
            init_cpu_threads(mc.hidden_size)
        self.page_size = p = config.page_size
        max_seq_len = config.max_seq_len_override or min(mc.max_position, _CPU_DEFAULT_MAX_SEQ_LEN)
        self.max_seq_len = (max_seq_len + p - 1) // p * p  # page-aligned: the page table's width
        self.max_running_req = config.max_running_req

        self.tp = tp = get_tp()
        check_tp_size(mc, tp.size)  # before the weights are read
        self.model = create_model(config.model_path, mc, self.dtype, self.device)
        shard_model(self.model, tp)  # this rank's slices (nothing with one rank)
        self.num_heads, self.num_kv_heads = mc.num_heads // tp.size, kv_head_range(mc.num_kv_heads, tp)[1]
        # after the weights are loaded (the fast copies are made from them), before anything runs the model
        self.linear_path = install_linear_path(self.model, config.linear_backend, self.device, self.dtype)
        self.num_pages = config.num_page_override or get_comm().min(self._auto_num_pages())  # ranks agree
        # the engine's own Triton kernels on CUDA (minisgl/kernel); a learner's store_kv spliced in runs as written
        self.kernels = self.device.type == "cuda" and triton_available()
        pool = TritonKVCachePool if self.kernels and KVCachePool.store_kv is OWN_STORE_KV else KVCachePool
        self.kv_cache = pool(mc.num_layers, self.num_pages, p, self.num_kv_heads, mc.head_dim, self.dtype,
                             self.device)
        for op in model_ops(self.model, VocabEmbedding):
            op.kernel = self.kernels
        for moe in model_ops(self.model, SparseMoE):
            moe._backend = run_experts
        # one row per running request, plus the last row for the dummy request; entries are KV slots
        self.page_table = torch.zeros(self.max_running_req + 1, self.max_seq_len, dtype=torch.int32,
                                      device=self.device)
        self.attn_backend = make_backend(self.num_heads, self.num_kv_heads, mc.head_dim, self.page_table,
                                         self.device, p, self.dtype)
        self.ctx = Context(p, self.kv_cache, self.attn_backend)
        set_global_ctx(self.ctx)
        self.dummy_req = Req(input_ids=[0], table_idx=self.max_running_req, cached_len=0, output_len=1, uid=-1)
        self.page_table[self.dummy_req.table_idx].fill_(self.kv_cache.dummy_slot)  # every position -> the dummy page
        self.sampler = Sampler(self.device)
        self.stream = make_stream(self.device)
        with stream_ctx(self.stream):
            self.graph_runner = GraphRunner(self.stream, self.device, self.model, self.attn_backend, self.dummy_req,
                                            self.max_seq_len, mc.vocab_size, config.cuda_graph_bs,
                                            config.cuda_graph_max_bs)

    def _auto_num_pages(self) -> int:
        mc, c = self.model_config, self.config
        per_page = KVCachePool.bytes_per_page(mc.num_layers, self.page_size, self.num_kv_heads, mc.head_dim,
                                              self.dtype)
        if is_cuda(self.device):
            budget = int(get_free_memory(self.device) * c.memory_ratio)
        else:
            budget = min(c.cpu_kv_bytes, get_free_memory(self.device) // 4)
        enough = self.max_running_req * self.max_seq_len // self.page_size  # more than this is never used
        pages = min(budget // per_page, enough)
        if pages < self.max_seq_len // self.page_size:
            raise ValueError(f"only {pages} KV pages fit in memory, fewer than one request of max_seq_len "
                             f"{self.max_seq_len} needs; lower max_seq_len_override")
        return pages

    def forward_batch(self, batch: Batch) -> ForwardOutput:
        """Run the model on a prepared batch and sample one token per real request."""
        with self.ctx.forward_batch(batch):
            if self.graph_runner.can_use_cuda_graph(batch):
                logits = self.graph_runner.replay(batch)
            else:
                logits = self.model.forward()[: batch.size]  # padded rows, if any, are discarded
        for req in batch.reqs:
            req.complete_one()
        params: list[SamplingParams] = [r.sampling_params for r in batch.reqs]
        next_tokens = self.sampler.sample(logits, params, [r.generator for r in batch.reqs])
        if self.tp.size > 1:
            get_comm().broadcast(next_tokens)  # every rank takes rank 0's tokens (sampling draws may differ)
        next_tokens_cpu = next_tokens.to("cpu", non_blocking=is_cuda(self.device))
        copy_done = make_event(self.device)
        copy_done.record()
        return ForwardOutput(next_tokens, next_tokens_cpu, copy_done)

    def refusal(self, ids: list[int], max_tokens: int) -> tuple[str, str] | None:
        """(why, the request's field it is about) when a request of prompt ``ids`` and ``max_tokens`` new tokens can
        never run here; None when it can (the offline LLM and the server's scheduler ask the same)."""
        n, limit, vocab = len(ids), self.max_seq_len, self.model_config.vocab_size
        if n == 0:
            return "the prompt is empty", "prompt"
        bad = [t for t in ids if not 0 <= t < vocab]
        if bad:
            return f"token id {bad[0]} is outside the vocabulary [0, {vocab})", "prompt"
        if n >= limit:
            return f"the prompt's {n} tokens leave no room for a new token in the context of {limit} (max_seq_len)", \
                "prompt"
        if n + max_tokens > limit:
            return (f"{n} prompt tokens + max_tokens {max_tokens} = {n + max_tokens} exceeds the context of {limit} "
                    "tokens (max_seq_len)", "max_tokens")
        from minisgl.scheduler.cache import pages_for  # here: the scheduler's package imports the engine

        pages = pages_for(n + max_tokens, self.page_size)
        if pages > self.num_pages:
            return f"the request needs {pages} KV pages; the pool has {self.num_pages}", "max_tokens"
        return None

    def shutdown(self) -> None:
        self.graph_runner.destroy_cuda_graphs()
        set_global_ctx(None)
        self.model = None  # type: ignore[assignment]
        self.kv_cache = None  # type: ignore[assignment]
        if is_cuda(self.device):
            torch.cuda.empty_cache()

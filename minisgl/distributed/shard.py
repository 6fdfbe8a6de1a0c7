"""Which slice of each weight a rank keeps, and the refusals when a size does not divide.

A rank keeps q heads [rank * H/N, (rank+1) * H/N). K/V heads: with N <= KV each rank keeps KV/N of them; with N > KV
each K/V head is replicated on N/KV ranks (rank r keeps head r // (N/KV)), so that a rank's q heads always find
their group's K/V head locally. The model is loaded whole, then each rank keeps its slices (``shard_model``): simple,
and the whole checkpoint passes through every rank once (fine for the models this course runs; a large deployment
reads only its slices).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from minisgl.distributed.info import TPInfo

if TYPE_CHECKING:
    from minisgl.models.base import BaseLLMModel
    from minisgl.models.config import ModelConfig


def check_tp_size(c: ModelConfig, size: int) -> None:
    """Refuse a tensor-parallel size the model cannot be split by, naming both numbers."""
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"tp_size must be a positive integer, got {size!r}")
    if size > 1 and c.num_experts:
        raise ValueError(f"tensor parallelism of a Mixture-of-Experts model ({c.num_experts} experts) is not "
                         "supported yet: run it with tp_size 1")
    what = [("attention heads", c.num_heads), ("MLP intermediate size", c.intermediate_size),
            ("vocabulary size", c.vocab_size)]
    for name, n in what:
        if n % size:
            raise ValueError(f"tp_size {size} does not divide the model's {name}, {n}: each rank keeps an equal "
                             f"share (try a divisor of {n})")
    kv = c.num_kv_heads
    if size > kv and size % kv:
        raise ValueError(f"tp_size {size} is neither a divisor nor a multiple of the model's {kv} K/V heads: "
                         f"each rank keeps whole K/V heads, or one replicated on tp_size/{kv} ranks")
    if size <= kv and kv % size:
        raise ValueError(f"tp_size {size} does not divide the model's {kv} K/V heads")


def kv_head_range(num_kv_heads: int, tp: TPInfo) -> tuple[int, int]:
    """(first K/V head, count) that rank ``tp.rank`` keeps."""
    if tp.size <= num_kv_heads:
        per = num_kv_heads // tp.size
        return tp.rank * per, per
    return tp.rank // (tp.size // num_kv_heads), 1  # replicated on size // num_kv_heads ranks


def _rows(t: torch.Tensor, *ranges: tuple[int, int]) -> torch.Tensor:
    return torch.cat([t[a:b] for a, b in ranges]).clone()


def _cols(t: torch.Tensor, a: int, b: int) -> torch.Tensor:
    return t[:, a:b].contiguous()


def shard_model(model: BaseLLMModel, tp: TPInfo) -> None:
    """Keep rank ``tp.rank``'s slices of a loaded dense model (minisgl/models/dense.py), in place, and mark the
    layers that exchange with the other ranks."""
    if tp.size == 1:
        return
    c = model.config
    check_tp_size(c, tp.size)
    r = tp.rank
    hq = c.num_heads // tp.size
    kv_n = kv_head_range(c.num_kv_heads, tp)[1]
    q_rows, k_rows, v_rows = qkv_rows(c, tp)
    inter = c.intermediate_size // tp.size
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        attn.qkv_proj.weight = _rows(attn.qkv_proj.weight, q_rows, k_rows, v_rows)
        if attn.qkv_proj.bias is not None:
            attn.qkv_proj.bias = _rows(attn.qkv_proj.bias, q_rows, k_rows, v_rows)
        row_parallel(attn.o_proj, *q_rows, r)
        attn._attn._num_heads, attn._attn._num_kv_heads = hq, kv_n
        gate = (r * inter, (r + 1) * inter)
        up = (c.intermediate_size + r * inter, c.intermediate_size + (r + 1) * inter)
        mlp.gate_up_proj.weight = _rows(mlp.gate_up_proj.weight, gate, up)
        if mlp.gate_up_proj.bias is not None:
            mlp.gate_up_proj.bias = _rows(mlp.gate_up_proj.bias, gate, up)
        row_parallel(mlp.down_proj, *gate, r)
    vocab = c.vocab_size // tp.size
    embed = model.model.embed_tokens
    embed.weight = _rows(embed.weight, (r * vocab, (r + 1) * vocab))
    embed._vocab_start = r * vocab
    head = model.lm_head
    if head._tied is None:
        head.weight = _rows(head.weight, (r * vocab, (r + 1) * vocab))
    head._gather = True


def qkv_rows(c: ModelConfig, tp: TPInfo) -> list[tuple[int, int]]:
    """Rank ``tp.rank``'s rows of the merged q/k/v projection, whose output features are every q head, then every
    k head, then every v head (head_dim rows each): [start, end) of its q heads, of its K/V heads' k rows and of
    their v rows."""
    d, r = c.head_dim, tp.rank
    hq = c.num_heads // tp.size
    kv_first, kv_n = kv_head_range(c.num_kv_heads, tp)
    q_all, kv_all = c.num_heads * d, c.num_kv_heads * d
    return [(r * hq * d, (r + 1) * hq * d),
            (q_all + kv_first * d, q_all + (kv_first + kv_n) * d),
            (q_all + kv_all + kv_first * d, q_all + kv_all + (kv_first + kv_n) * d)]


def row_parallel(linear, a: int, b: int, rank: int) -> None:
    """Keep input features [a, b); the outputs are summed across ranks, so only rank 0 adds the bias."""
    linear.weight = _cols(linear.weight, a, b)
    if linear.bias is not None and rank != 0:
        linear.bias = torch.zeros_like(linear.bias)
    linear._all_reduce = True

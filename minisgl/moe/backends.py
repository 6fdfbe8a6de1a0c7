"""The ways to run the experts once the router has chosen them. Every backend takes

    x [T, H], weights [T, k], ids [T, k], gate_up [E * 2I, H] (expert e's gate rows, then its up rows),
    down [E * H, I] (expert e's rows e*H .. (e+1)*H)

and returns sum over slots j of weights[t, j] * down_e(silu(gate_e(x_t)) * up_e(x_t)), e = ids[t, j]: [T, H]."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import torch
import torch.nn.functional as F

from minisgl.moe.align import moe_align_block_size
from minisgl.utils import Registry

MoEBackend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
MOE_BACKENDS: Registry[MoEBackend] = Registry("MoE backend")

BLOCK_M = 16  # rows of one block of the aligned layout (a fused kernel's program)


def _shapes(x: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor) -> tuple[int, int]:
    """(E, I) from the flattened weights."""
    hidden, inter = x.shape[1], down.shape[1]
    experts = down.shape[0] // hidden
    if tuple(gate_up.shape) != (experts * 2 * inter, hidden) or tuple(down.shape) != (experts * hidden, inter):
        raise ValueError(f"expert weights of shapes {tuple(gate_up.shape)} and {tuple(down.shape)} do not fit "
                         f"hidden size {hidden}")
    return experts, inter


@MOE_BACKENDS.register("torch")
def moe_torch(x: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor, gate_up: torch.Tensor,
              down: torch.Tensor) -> torch.Tensor:
    """Expert by expert, in ascending order, each over its tokens (slot-major): Hugging Face's order of sums."""
    experts, inter = _shapes(x, gate_up, down)
    hidden = x.shape[1]
    out = torch.zeros_like(x)
    for e in torch.unique(ids).tolist():
        slot, tok = torch.where(ids.T == e)
        h = F.linear(x[tok], gate_up[e * 2 * inter:(e + 1) * 2 * inter])
        gate, up = h.chunk(2, dim=-1)
        y = F.linear(F.silu(gate) * up, down[e * hidden:(e + 1) * hidden]) * weights[tok, slot, None]
        out.index_add_(0, tok, y.to(out.dtype))
    return out


@MOE_BACKENDS.register("fused_torch")
def moe_fused_torch(x: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor, gate_up: torch.Tensor,
                    down: torch.Tensor) -> torch.Tensor:
    """The aligned layout and one GEMM per expert over its blocks: what the Triton kernel does, block by block."""
    experts, inter = _shapes(x, gate_up, down)
    t, k = ids.shape
    hidden = x.shape[1]
    sorted_ids, block_expert, total = moe_align_block_size(ids, BLOCK_M, experts)
    valid = sorted_ids < t * k
    rows = torch.where(valid, sorted_ids // k, 0)
    h = torch.zeros(total, 2 * inter, dtype=x.dtype, device=x.device)
    y = torch.zeros(total, hidden, dtype=x.dtype, device=x.device)
    row_expert = block_expert.repeat_interleave(BLOCK_M)
    for e in torch.unique(block_expert).tolist():
        span = (row_expert == e).nonzero().flatten()
        a, b = int(span[0]), int(span[-1]) + 1  # an expert's blocks are contiguous
        h[a:b] = F.linear(x[rows[a:b]], gate_up[e * 2 * inter:(e + 1) * 2 * inter])
        gate, up = h[a:b].chunk(2, dim=-1)
        y[a:b] = F.linear(F.silu(gate) * up, down[e * hidden:(e + 1) * hidden])
    y = y * torch.where(valid, weights.reshape(-1)[sorted_ids.clamp(max=t * k - 1)], 0)[:, None]
    out = torch.zeros(t * k, hidden, dtype=x.dtype, device=x.device)
    out[sorted_ids[valid]] = y[valid]
    return out.view(t, k, hidden).sum(dim=1)


@MOE_BACKENDS.register("triton")
def moe_triton(x: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor, gate_up: torch.Tensor,
               down: torch.Tensor) -> torch.Tensor:
    """The aligned layout and two launches of one grouped-GEMM Triton kernel (gate/up by token, down by pair with
    the routing weight applied); compiled on CUDA, the interpreter on a CPU."""
    experts, inter = _shapes(x, gate_up, down)
    t, k = ids.shape
    hidden = x.shape[1]
    sorted_ids, block_expert, total = moe_align_block_size(ids, BLOCK_M, experts)
    x, w = x.contiguous(), weights.contiguous().reshape(-1)
    h = torch.zeros(t * k, 2 * inter, dtype=x.dtype, device=x.device)
    _grouped_gemm(x, gate_up, h, w, sorted_ids, block_expert, t * k, k, by_token=True, weigh=False)
    gate, up = h.chunk(2, dim=-1)
    act = (F.silu(gate) * up).contiguous()
    y = torch.zeros(t * k, hidden, dtype=x.dtype, device=x.device)
    _grouped_gemm(act, down, y, w, sorted_ids, block_expert, t * k, k, by_token=False, weigh=True)
    return y.view(t, k, hidden).sum(dim=1)


def _grouped_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, w: torch.Tensor, sorted_ids: torch.Tensor,
                  block_expert: torch.Tensor, pairs: int, top_k: int, by_token: bool, weigh: bool) -> None:
    """c[pair] = a[row] @ b_e^T (* w[pair]) for every pair of the aligned layout; row = pair // top_k when
    ``by_token`` else pair; b is [E * N, K] (expert e's N rows together)."""
    kern = _kernel()
    n, kdim = c.shape[1], a.shape[1]
    grid = (block_expert.numel(), kern.cdiv(n, kern.BLOCK_N))
    kern.fn[grid](a, b, c, w, sorted_ids, block_expert, pairs, n, kdim, top_k,
                  BY_TOKEN=by_token, WEIGH=weigh, IEEE=a.dtype == torch.float32, UPCAST=_interpreted(),
                  BLOCK_M=BLOCK_M, BLOCK_N=kern.BLOCK_N, BLOCK_K=kern.BLOCK_K)


# Triton 3.9's interpreter multiplies 16-bit tiles wrong in tl.dot (values off by orders of magnitude, checked in
# tests/test_moe.py): there the tiles are upcast to float32 first; compiled, the GPU's 16-bit dot is used
def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


@functools.cache
def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def grouped_gemm(a_ptr, b_ptr, c_ptr, w_ptr, sorted_ptr, expert_ptr, pairs, N, K, top_k,
                     BY_TOKEN: tl.constexpr, WEIGH: tl.constexpr, IEEE: tl.constexpr, UPCAST: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        block, col_block = tl.program_id(0), tl.program_id(1)
        pair = tl.load(sorted_ptr + block * BLOCK_M + tl.arange(0, BLOCK_M))
        valid = pair < pairs
        row = pair // top_k if BY_TOKEN else pair
        expert = tl.load(expert_ptr + block).to(tl.int64)
        cols = col_block * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + row[:, None].to(tl.int64) * K + ks[None, :],
                        mask=valid[:, None] & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (expert * N + cols[None, :]) * K + ks[:, None],
                        mask=(cols[None, :] < N) & (ks[:, None] < K), other=0.0)  # [BLOCK_K, BLOCK_N]: b_e^T
            if IEEE:
                acc += tl.dot(a, b, input_precision="ieee")  # float32 stays float32 (no TF32 on a GPU)
            elif UPCAST:
                acc += tl.dot(a.to(tl.float32), b.to(tl.float32))
            else:
                acc += tl.dot(a, b)
        if WEIGH:
            acc = acc * tl.load(w_ptr + pair, mask=valid, other=0.0).to(tl.float32)[:, None]
        tl.store(c_ptr + pair[:, None].to(tl.int64) * N + cols[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=valid[:, None] & (cols[None, :] < N))

    class K:
        fn, cdiv, BLOCK_N, BLOCK_K = grouped_gemm, triton.cdiv, 32, 32

    return K


def default_moe_backend(device: torch.device) -> str:
    """Triton on CUDA where it is installed; the torch reference otherwise."""
    if device.type == "cuda":
        from minisgl.kernel import triton_available

        if triton_available():
            return "triton"
    return "torch"

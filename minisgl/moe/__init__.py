"""Mixture of Experts (the book's chapter 20): routing each token to its top-k experts, and three ways to run them.

- ``torch``: the reference, expert by expert in ascending order (Hugging Face's order of sums);
- ``fused_torch``: the layout a fused kernel wants (``moe_align_block_size``: the (token, slot) pairs sorted by
  expert, each expert's share padded to a whole block) and a grouped GEMM over it, in torch;
- ``triton``: the same grouped GEMM as one Triton kernel per projection (compiled on CUDA; Triton's interpreter on a
  CPU, TRITON_INTERPRET=1).

Chosen through MOE_BACKENDS by the engine (EngineConfig.moe_backend).
"""

from __future__ import annotations

from minisgl.moe.align import moe_align_block_size
from minisgl.moe.backends import MOE_BACKENDS, MoEBackend, default_moe_backend
from minisgl.moe.route import route

__all__ = ["MOE_BACKENDS", "MoEBackend", "default_moe_backend", "moe_align_block_size", "route"]

from __future__ import annotations

import torch

from minisgl.attention.base import BaseAttnBackend, BaseAttnMetadata
from minisgl.attention.torch_backend import TorchAttnBackend, TorchAttnMetadata, TorchStaticAttnBackend
from minisgl.utils import Registry

ATTENTION_BACKENDS: Registry[BaseAttnBackend] = Registry("attention backend")


@ATTENTION_BACKENDS.register("torch")
def _torch(num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor, device: torch.device,
           page_size: int, dtype: torch.dtype) -> BaseAttnBackend:
    return TorchAttnBackend(num_heads, num_kv_heads, head_dim, page_table, device)


@ATTENTION_BACKENDS.register("torch_static")
def _torch_static(num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor,
                  device: torch.device, page_size: int, dtype: torch.dtype) -> BaseAttnBackend:
    return TorchStaticAttnBackend(num_heads, num_kv_heads, head_dim, page_table, device)


@ATTENTION_BACKENDS.register("fi")
def _flashinfer(num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor,
                device: torch.device, page_size: int, dtype: torch.dtype) -> BaseAttnBackend:
    from minisgl.attention.fi import FlashInferBackend  # lazily: FlashInfer is a GPU-only dependency

    return FlashInferBackend(num_heads, num_kv_heads, head_dim, page_table, device, page_size, dtype)


@ATTENTION_BACKENDS.register("fa")
def _flash_attention(num_heads: int, num_kv_heads: int, head_dim: int, page_table: torch.Tensor,
                     device: torch.device, page_size: int, dtype: torch.dtype) -> BaseAttnBackend:
    from minisgl.attention.fa import FlashAttentionBackend

    if device.type != "cuda":
        raise ValueError("attention backend 'fa' (FlashAttention-3) needs a CUDA device")
    return FlashAttentionBackend(num_heads, num_kv_heads, head_dim, page_table, device, page_size)


def default_backend(device: torch.device) -> str:
    if device.type != "cuda":
        return "torch"
    try:
        import flashinfer  # noqa: F401
    except ImportError:
        return "torch_static"
    return "fi"


__all__ = ["ATTENTION_BACKENDS", "BaseAttnBackend", "BaseAttnMetadata", "TorchAttnBackend", "TorchAttnMetadata",
           "TorchStaticAttnBackend", "default_backend"]

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

LINEAR_BACKENDS = ("auto", "default", "transposed", "onednn", "onednn16", "mkl1")  # see minisgl.engine.linear_path


@dataclass
class EngineConfig:
    model_path: str | Path
    dtype: torch.dtype = torch.float32
    device: torch.device | str | None = None  # None: CUDA when present, else the CPU
    max_running_req: int = 64
    num_page_override: int | None = None  # None: sized from free memory
    max_seq_len_override: int | None = None  # None: the model's max_position_embeddings, capped at 4096
    page_size: int = 1
    cache_type: str = "radix"
    attention_backend: str | None = None  # None: 'fi' on CUDA with FlashInfer, 'torch_static' on CUDA, 'torch' on CPU
    cuda_graph_max_bs: int | None = None  # None: automatic on CUDA, off on a CPU; < 1: off
    cuda_graph_bs: list[int] | None = None  # an explicit list of graph batch sizes wins over cuda_graph_max_bs
    chunked_prefill_size: int = 4096  # token budget of one prefill batch; longer prompts are chunked
    memory_ratio: float = 0.8  # share of free device memory for the KV pool (CUDA)
    cpu_kv_bytes: int = 2 << 30  # KV pool budget on a CPU
    linear_backend: str = "auto"  # auto: measured at start-up; or one of LINEAR_BACKENDS for all (CPU, float32)
    moe_backend: str | None = None  # Mixture-of-Experts models: None: 'triton' on CUDA with Triton, else 'torch'

    def validate(self) -> None:
        if self.page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {self.page_size}")
        if self.max_running_req < 1:
            raise ValueError(f"max_running_req must be >= 1, got {self.max_running_req}")
        if self.chunked_prefill_size < 1:
            raise ValueError(f"chunked_prefill_size must be >= 1, got {self.chunked_prefill_size}")
        if self.num_page_override is not None and self.num_page_override < 1:
            raise ValueError(f"num_page_override must be >= 1, got {self.num_page_override}")
        if self.max_seq_len_override is not None and self.max_seq_len_override < 2:
            raise ValueError(f"max_seq_len_override must be >= 2, got {self.max_seq_len_override}")
        if self.linear_backend not in LINEAR_BACKENDS:
            raise ValueError(f"linear_backend must be one of {', '.join(LINEAR_BACKENDS)}, got {self.linear_backend!r}")
        if self.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise ValueError(f"dtype must be float32, bfloat16 or float16, got {self.dtype}")

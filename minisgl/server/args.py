"""What `python -m minisgl serve` is told: the model, where to listen, the engine's options."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

DTYPES = ("float32", "bfloat16", "float16")


@dataclass
class ServerArgs:
    model: str
    host: str = "127.0.0.1"
    port: int = 1919
    served_model_name: str = ""  # default: the model folder's name
    num_tokenizer: int = 0  # tokenizer worker processes; 0: the detokenizer tokenizes too
    dtype: str = "float32"
    device: str | None = None
    max_running_req: int = 64
    max_seq_len: int | None = None
    num_pages: int | None = None
    page_size: int = 1
    cache_type: str = "radix"
    chunked_prefill_size: int = 4096
    attention_backend: str | None = None
    cuda_graph_max_bs: int | None = None
    linear_backend: str = "auto"
    tp_size: int = 1
    ipc_dir: str = ""  # set by the launcher: where the processes' sockets live

    def __post_init__(self) -> None:
        if not self.served_model_name:
            self.served_model_name = Path(self.model).name or self.model

    def addr(self, name: str) -> str:
        return f"ipc://{self.ipc_dir}/{name}"

    def engine_config(self):  # -> EngineConfig, imported here so the API process never imports torch for it
        import torch

        from minisgl.engine import EngineConfig

        on_cpu = (self.device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cpu")
        # a server decodes batches: on a CPU the batched static decode, not the per-request reference
        backend = self.attention_backend or ("torch_static" if on_cpu else None)
        return EngineConfig(
            model_path=self.model, dtype=getattr(torch, self.dtype), device=self.device,
            max_running_req=self.max_running_req, num_page_override=self.num_pages,
            max_seq_len_override=self.max_seq_len, page_size=self.page_size, cache_type=self.cache_type,
            attention_backend=backend, cuda_graph_max_bs=self.cuda_graph_max_bs,
            chunked_prefill_size=self.chunked_prefill_size, linear_backend=self.linear_backend,
        )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="model folder (default: SmolLM2-135M-Instruct from tools/setup_models.py)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=1919)
    p.add_argument("--served-model-name", default="", help="the model's id in the API (default: the folder's name)")
    p.add_argument("--num-tokenizer", type=int, default=0,
                   help="tokenizer worker processes (default 0: the detokenizer tokenizes too)")
    p.add_argument("--dtype", choices=DTYPES, default="float32")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    p.add_argument("--max-running-requests", dest="max_running_req", type=int, default=64)
    p.add_argument("--max-seq-len", type=int, default=None, help="the context (default: the model's, at most 4096)")
    p.add_argument("--num-pages", type=int, default=None, help="KV pages (default: sized from memory)")
    p.add_argument("--page-size", type=int, default=1)
    p.add_argument("--cache-type", default="radix")
    p.add_argument("--chunked-prefill-size", type=int, default=4096)
    p.add_argument("--attention-backend", default=None,
                   help="torch, torch_static or fi (default: torch_static on a CPU, the engine's choice on CUDA)")
    p.add_argument("--cuda-graph-max-bs", type=int, default=None)
    p.add_argument("--linear-backend", default="auto", help="the CPU's linear kernels (see `generate --help`)")
    p.add_argument("--tp", dest="tp_size", type=int, default=1,
                   help="tensor-parallel ranks, one process each (gloo on a CPU, one GPU each on CUDA)")


def from_namespace(ns: argparse.Namespace) -> ServerArgs:
    names = set(ServerArgs.__dataclass_fields__)
    return ServerArgs(**{k: v for k, v in vars(ns).items() if k in names})

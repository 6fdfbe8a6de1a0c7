"""A device abstraction: CUDA streams, events and pinned memory, which degrade to no-ops on a CPU."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch


def is_cuda(device: torch.device | str) -> bool:
    return torch.device(device).type == "cuda"


def default_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def synchronize(device: torch.device) -> None:
    if is_cuda(device):
        torch.cuda.synchronize(device)


def get_free_memory(device: torch.device) -> int:
    """Free bytes on the device; on a CPU, the memory available to this process."""
    if is_cuda(device):
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 << 30


class NullStream:
    """A CPU's stand-in for torch.cuda.Stream: work is already ordered."""

    def wait_stream(self, other: Any) -> None:
        pass

    def synchronize(self) -> None:
        pass


class NullEvent:
    def record(self, stream: Any = None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True


def make_stream(device: torch.device) -> Any:
    return torch.cuda.Stream(device) if is_cuda(device) else NullStream()


def make_event(device: torch.device) -> Any:
    return torch.cuda.Event() if is_cuda(device) else NullEvent()


def current_stream(device: torch.device) -> Any:
    return torch.cuda.current_stream(device) if is_cuda(device) else NullStream()


def stream_ctx(stream: Any) -> AbstractContextManager[Any]:
    return torch.cuda.stream(stream) if isinstance(stream, torch.cuda.Stream) else nullcontext()


def pin(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Pinned host memory makes device-to-host copies asynchronous; without CUDA it is plain memory."""
    return t.pin_memory() if is_cuda(device) else t


def init_cpu_threads(hidden_size: int) -> None:
    """Small decode matmuls are slower with many threads (the sync costs more than the work): one thread for a tiny
    model, at most four otherwise; OMP_NUM_THREADS, when set, decides instead."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    n = 1 if hidden_size < 256 else min(4, os.cpu_count() or 1)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)

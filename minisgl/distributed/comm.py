"""What a rank needs from the others: sums (row-parallel linears, the embedding), the LM head's logits side by side,
and rank 0's tokens and requests. LocalComm is the one rank of a group of one; TorchComm is torch.distributed's
default group (a rank per process: gloo or NCCL); ThreadComm the rank threads of one process, in memory."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import torch


class Communicator:
    def all_reduce(self, x: torch.Tensor) -> None:
        """x = the sum of every rank's x, in place."""

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        """Every rank's x side by side along the last dimension, in rank order."""
        return x

    def broadcast(self, x: torch.Tensor) -> None:
        """x = rank 0's x, in place."""

    def broadcast_object(self, obj: Any) -> Any:
        """Rank 0's obj (picklable), on every rank."""
        return obj

    def min(self, n: int) -> int:
        """The smallest of the ranks' n."""
        return n

    def close(self) -> None:
        pass


class LocalComm(Communicator):
    """A group of one: nothing to exchange."""


class TorchComm(Communicator):
    """torch.distributed's default group: gloo on a CPU, NCCL on CUDA. ``address``: rank 0's tcp://host:port."""

    def __init__(self, rank: int, size: int, address: str, device: torch.device, timeout_s: float = 600) -> None:
        import torch.distributed as dist

        self._dist = dist
        self.device = device
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, init_method=address, rank=rank, world_size=size,
                                timeout=timedelta(seconds=timeout_s))
        self.size = size

    def all_reduce(self, x: torch.Tensor) -> None:
        self._dist.all_reduce(x)

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        parts = [torch.empty_like(x) for _ in range(self.size)]
        self._dist.all_gather(parts, x)
        return torch.cat(parts, dim=-1)

    def broadcast(self, x: torch.Tensor) -> None:
        self._dist.broadcast(x, src=0)

    def broadcast_object(self, obj: Any) -> Any:
        box = [obj]
        self._dist.broadcast_object_list(box, src=0, device=self.device if self.device.type == "cuda" else None)
        return box[0]

    def min(self, n: int) -> int:
        t = torch.tensor([n], dtype=torch.int64, device=self.device)
        self._dist.all_reduce(t, op=self._dist.ReduceOp.MIN)
        return int(t.item())

    def close(self) -> None:
        if self._dist.is_initialized():
            self._dist.destroy_process_group()


class ThreadExchange:
    """What the rank threads of one group share: a slot per rank and a barrier (minisgl/distributed/threads.py)."""

    def __init__(self, size: int, timeout_s: float) -> None:
        self.size, self.timeout_s = size, timeout_s
        self.barrier = threading.Barrier(size)
        self.slots: list[Any] = [None] * size


class ThreadComm(Communicator):
    """A rank that is a thread of this process: the ranks exchange tensors in memory, each putting a copy of its
    value in its slot, then every rank reads every slot, in rank order, so that all compute the same sum. No
    sockets: the judge's sandbox has no network, not even loopback, which gloo's TCP transport needs."""

    def __init__(self, exchange: ThreadExchange, rank: int) -> None:
        self.ex, self.rank = exchange, rank

    def _everyone(self, value: Any) -> list[Any]:
        ex = self.ex
        ex.slots[self.rank] = value
        ex.barrier.wait(ex.timeout_s)  # every slot filled
        values = list(ex.slots)
        ex.barrier.wait(ex.timeout_s)  # every slot read before any is refilled
        return values

    def all_reduce(self, x: torch.Tensor) -> None:
        values = self._everyone(x.clone())
        total = values[0].clone()
        for v in values[1:]:
            total += v
        x.copy_(total)

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat(self._everyone(x.clone()), dim=-1)

    def broadcast(self, x: torch.Tensor) -> None:
        x.copy_(self._everyone(x.clone())[0])

    def broadcast_object(self, obj: Any) -> Any:
        return self._everyone(obj)[0]

    def min(self, n: int) -> int:
        return min(self._everyone(n))


_COMM: Communicator = LocalComm()
_THREAD = threading.local()  # .comm: a rank thread's own communicator


def get_comm() -> Communicator:
    return getattr(_THREAD, "comm", _COMM)


def set_comm(comm: Communicator) -> None:
    """The process's communicator (a rank process); ``set_thread_comm`` for a rank thread."""
    global _COMM
    _COMM = comm


def set_thread_comm(comm: Communicator) -> None:
    _THREAD.comm = comm

"""What a rank needs from the others: sums (row-parallel linears, the embedding), the LM head's logits side by side,
and rank 0's tokens and requests. LocalComm is the one rank of a group of one; TorchComm is torch.distributed."""

from __future__ import annotations

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


_COMM: Communicator = LocalComm()


def get_comm() -> Communicator:
    return _COMM


def set_comm(comm: Communicator) -> None:
    global _COMM
    _COMM = comm

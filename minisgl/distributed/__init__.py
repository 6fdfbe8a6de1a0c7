"""Tensor parallelism (the book's chapter 16): the rank's place, the communicator between ranks, the model's shards
and the rank processes.

Every rank holds a slice of each weight and runs the same steps on the same batch: column-parallel linears (q/k/v,
gate/up) keep a slice of the output features, row-parallel ones (o, down) a slice of the input features and sum
their outputs across ranks (all-reduce); the embedding keeps a slice of the vocabulary (rows outside it are zeros,
summed in); the LM head computes its slice of the logits and gathers the rest. One process per rank: gloo on a CPU,
NCCL on CUDA, through torch.distributed.
"""

from __future__ import annotations

from minisgl.distributed.comm import Communicator, LocalComm, TorchComm, get_comm, set_comm
from minisgl.distributed.info import TPInfo, get_tp, set_tp
from minisgl.distributed.shard import check_tp_size, kv_head_range, shard_model

__all__ = ["Communicator", "LocalComm", "TPInfo", "TorchComm", "check_tp_size", "get_comm", "get_tp",
           "kv_head_range", "set_comm", "set_tp", "shard_model"]

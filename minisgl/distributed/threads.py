"""Ranks as threads of one process: each thread has its own place, its own communicator and its own engine
context, and every rank runs the code of this process: the judge's tensor-parallel exercises, whose learner code is
spliced into this process only, run their ranks this way. The threads exchange tensors in memory (ThreadComm): the
judge's sandbox has no network, which gloo needs. Spawned rank processes (ranks.py) import the engine afresh and
meet over gloo or NCCL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from minisgl.distributed.comm import ThreadComm, ThreadExchange, set_thread_comm
from minisgl.distributed.info import TPInfo, set_thread_tp


def run_rank_threads(size: int, fn: Callable[[int], Any], timeout_s: float = 300) -> list[Any]:
    """fn(rank) in ``size`` threads, each a rank of one group; every rank's result, in rank order. A rank that
    raises breaks the group at once (the others' collectives fail instead of waiting), and this raises its error."""
    from minisgl.core import own_thread_ctx

    exchange = ThreadExchange(size, timeout_s)
    results: list[Any] = [None] * size
    errors: list[BaseException] = []  # in the order they happened; the first is the cause
    lock = threading.Lock()

    def rank_main(rank: int) -> None:
        try:
            own_thread_ctx()
            set_thread_tp(TPInfo(rank, size))
            set_thread_comm(ThreadComm(exchange, rank))
            results[rank] = fn(rank)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            with lock:
                errors.append(e)
            exchange.barrier.abort()  # the others stop waiting for this rank

    threads = [threading.Thread(target=rank_main, args=(r,), name=f"tp-rank-{r}", daemon=True) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    if any(t.is_alive() for t in threads):
        raise TimeoutError(f"a rank thread was still running after {timeout_s} s")
    if errors:
        first = next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
        raise first
    return results


def generate_in_rank_threads(size: int, model_path: Any, prompts: list[list[int]], params: list[Any],
                             **engine: Any) -> list[list[int]]:
    """Greedy (or seeded) generation with ``size`` rank threads: each builds an engine (EngineConfig fields in
    ``engine``) and a scheduler and runs the same requests; rank 0's output token ids."""
    import torch

    from minisgl.core import new_req
    from minisgl.engine import Engine, EngineConfig
    from minisgl.scheduler import Scheduler

    def rank(r: int) -> list[list[int]]:
        eng = Engine(EngineConfig(model_path=model_path, **engine))
        scheduler = Scheduler(eng)
        reqs = [new_req(ids, p, uid, eng.device) for uid, (ids, p) in enumerate(zip(prompts, params))]
        with torch.inference_mode():
            for req in reqs:
                scheduler.add_request(req)
            scheduler.run_until_idle()
        eng.shutdown()
        return [req.output_ids for req in reqs]

    return run_rank_threads(size, rank)[0]

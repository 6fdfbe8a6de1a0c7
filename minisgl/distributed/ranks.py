"""The ranks of an offline LLM: this process is rank 0, ranks 1..N-1 are spawned processes. Rank 0 sends each
generate() call's requests to the others over a queue, then every rank runs the same scheduler steps; inside a step
they meet in the model's all-reduces and all-gathers (gloo or NCCL) and take rank 0's sampled tokens."""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import threading
import time
import traceback
from dataclasses import replace
from typing import Any

from minisgl.distributed.comm import LocalComm, TorchComm, set_comm
from minisgl.distributed.info import TPInfo, set_tp
from minisgl.engine.config import EngineConfig


class RankDiedError(RuntimeError):
    """A tensor-parallel rank's process ended; the group is shut down."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(config: EngineConfig, rank: int, size: int, address: str, parent: int, inbox: Any,
               role: str) -> None:
    from minisgl.utils.process import become_worker

    become_worker(f"tp{rank}", parent)
    try:
        import torch

        from minisgl.core import new_req
        from minisgl.engine import Engine
        from minisgl.scheduler import Scheduler
        from minisgl.utils import default_device

        set_tp(TPInfo(rank, size))
        device = torch.device(config.device) if config.device is not None else default_device()
        if device.type == "cuda":  # one GPU per rank: rank r on cuda:r
            device = torch.device("cuda", rank)
            torch.cuda.set_device(device)
            config = replace(config, device=device)
        set_comm(TorchComm(rank, size, address, device))
        engine = Engine(config)
        scheduler = Scheduler(engine)
        if role == "serve":  # rank 0's SchedulerIO hands over each step's messages: the same step here
            from minisgl.scheduler.io import SchedulerIO
            from minisgl.utils import stream_ctx

            io = SchedulerIO(scheduler, None, None)
            with stream_ctx(engine.stream), torch.inference_mode():
                while (msgs := inbox.get()) is not None:
                    io.step_with(msgs)
        else:
            with torch.inference_mode():  # generate(): each call's requests, run until done
                while (work := inbox.get()) is not None:
                    for ids, params, uid in work:
                        scheduler.add_request(new_req(ids, params, uid, engine.device))
                    scheduler.run_until_idle()
    except BaseException as e:  # noqa: BLE001 - any failure ends this rank; the others see the closed connection
        if _peer_gone(e):
            os._exit(PEER_GONE)  # not this rank's fault: another one died first
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


PEER_GONE = 3  # a rank's exit code when it stopped because another rank's connection closed


def _peer_gone(e: BaseException) -> bool:
    return isinstance(e, RuntimeError) and any(s in str(e) for s in ("closed by peer", "Connection reset",
                                                                    "Broken pipe"))


class RankGroup:
    """Ranks 1..size-1 as processes; makes the calling process rank 0 of a TorchComm group."""

    def __init__(self, config: EngineConfig, size: int, timeout_s: float = 300, role: str = "generate") -> None:
        """``role``: 'generate' (LLM.generate's requests, ``submit``ted per call) or 'serve' (a SchedulerIO's
        messages, ``submit``ted per step)."""
        import torch

        from minisgl.utils import default_device

        self.size = size
        device = torch.device(config.device) if config.device is not None else default_device()
        if device.type == "cuda":
            if torch.cuda.device_count() < size:
                raise ValueError(f"tp_size {size} needs {size} GPUs (one per rank); {torch.cuda.device_count()} "
                                 "are visible")
            device = torch.device("cuda", 0)  # rank 0 here, rank r on cuda:r
            torch.cuda.set_device(device)
            config.device = device
        address = f"tcp://127.0.0.1:{_free_port()}"
        ctx = mp.get_context("spawn")
        self._inboxes = [ctx.Queue() for _ in range(1, size)]
        self._procs = [ctx.Process(target=_rank_main, args=(config, r, size, address, os.getpid(), q, role),
                                   name=f"minisgl-tp{r}", daemon=True)
                       for r, q in zip(range(1, size), self._inboxes)]
        for p in self._procs:
            p.start()
        got: list[Any] = []

        def join_group() -> None:  # blocks until every rank has joined: watched from here for a rank that died
            try:
                got.append(TorchComm(0, size, address, device, timeout_s))
            except BaseException as e:  # noqa: BLE001
                got.append(e)

        threading.Thread(target=join_group, name="tp-join", daemon=True).start()
        while not got:
            if self.dead() is not None:
                self.close()
                raise RankDiedError(f"{self.dead()} before the group formed")
            time.sleep(0.05)
        if isinstance(got[0], BaseException):
            self.close()
            raise RankDiedError(f"the tensor-parallel group did not form: {got[0]}")
        set_tp(TPInfo(0, size))
        set_comm(got[0])

    def dead(self) -> str | None:
        """'rank R (pid P) died (exit code C)' for a rank process that has ended, else None: one that ended by
        itself rather than because another one had (exit code PEER_GONE), where there is one."""
        ended = [(r, p) for r, p in enumerate(self._procs, start=1) if not p.is_alive()]
        ended.sort(key=lambda rp: rp[1].exitcode == PEER_GONE)
        if not ended:
            return None
        r, p = ended[0]
        return f"tensor-parallel rank {r} (pid {p.pid}) died (exit code {p.exitcode})"

    def submit(self, work: list[Any]) -> None:
        for q in self._inboxes:
            q.put(work)

    def failed(self, error: BaseException) -> RankDiedError:
        """The error to raise after ``error`` in a step: names the rank that died (waiting a moment for its exit)."""
        deadline = time.monotonic() + 5
        while (why := self.dead()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        self.close()
        return RankDiedError(f"{why or 'tensor-parallel rank 0 failed'}: {type(error).__name__}: {error}")

    def close(self) -> None:
        """Stop every rank (asked, then killed after 10 s) and leave this process a group of one."""
        for q, p in zip(self._inboxes, self._procs):
            if p.is_alive():
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + 10
        for p in self._procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(5)
        from minisgl.distributed.comm import get_comm

        comm = get_comm()
        set_comm(LocalComm())
        set_tp(TPInfo())
        if isinstance(comm, TorchComm):
            try:
                comm.close()
            except Exception:  # noqa: BLE001 - the group may be broken already (a rank died)
                pass
        for q in self._inboxes:
            q.close()

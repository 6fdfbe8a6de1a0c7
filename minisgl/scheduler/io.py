"""The scheduler's input and output when serving (the book's chapter 14): requests and aborts arrive over ZMQ, each
step's new tokens leave over ZMQ, and the loop waits for input only when it has nothing to run."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from minisgl.core import Req
from minisgl.env import ENV
from minisgl.message import AbortMsg, ErrorMsg, StatsMsg, StatsReplyMsg, TokensMsg, UserMsg
from minisgl.message.channel import Receiver, Sender
from minisgl.scheduler.scheduler import ForwardInput, Scheduler
from minisgl.utils import init_logger, stream_ctx

logger = init_logger(__name__)

_EARLY_ABORTS = 4096  # aborts remembered for requests not arrived yet (a client gone before its prompt was tokenized)


class SchedulerIO:
    def __init__(self, scheduler: Scheduler, inbox: Receiver | None, outbox: Sender | None,
                 mirror: Callable[[list[Any]], None] | None = None) -> None:
        """``mirror``: tensor parallelism's rank 0 hands each step's messages to the other ranks (which run a
        SchedulerIO with no sockets, ``step_with``) before running the step; ``outbox`` None: nothing is sent."""
        self.scheduler = scheduler
        self.inbox, self.outbox = inbox, outbox if outbox is not None else _Nowhere()
        self.mirror = mirror
        self.reqs: dict[int, Req] = {}  # uid -> every request not finished: waiting, prefilling or decoding
        self.early_aborts: OrderedDict[int, None] = OrderedDict()
        self._last: tuple[ForwardInput, Any] | None = None  # the batch in flight (overlap scheduling)

    # -- input
    def _refuse(self, msg: UserMsg) -> tuple[str, str] | None:
        """(why, the request field it is about) if the request cannot run here."""
        if msg.uid in self.reqs:
            return f"request id {msg.uid} is already running", "uid"
        return self.scheduler.engine.refusal(msg.input_ids, msg.sampling_params.max_tokens)

    def add(self, msg: UserMsg) -> None:
        if msg.uid in self.early_aborts:  # its client went away before it arrived
            del self.early_aborts[msg.uid]
            return
        refused = self._refuse(msg)
        if refused is not None:
            self.outbox.send(ErrorMsg(uid=msg.uid, message=refused[0], status=400, param=refused[1]))
            return
        p = msg.sampling_params
        req = Req(input_ids=list(msg.input_ids), table_idx=-1, cached_len=0, output_len=p.max_tokens, uid=msg.uid,
                  sampling_params=p)
        if p.seed is not None and not p.is_greedy:
            req.generator = torch.Generator(device=self.scheduler.device).manual_seed(p.seed)
        self.reqs[msg.uid] = req
        self.scheduler.add_request(req)

    def abort(self, uid: int) -> None:
        """Stop a request wherever it is: waiting, prefilling in chunks or decoding; its pages go back."""
        req = self.reqs.pop(uid, None)
        if req is None:
            self.early_aborts[uid] = None
            while len(self.early_aborts) > _EARLY_ABORTS:
                self.early_aborts.popitem(last=False)
            return
        s = self.scheduler
        if req in s.prefill_manager.pending:  # waiting, or admitted with chunks left
            s.prefill_manager.pending.remove(req)
        if req.uid in s.prefill_manager.admitted:  # it holds a table row and pages
            s.decode_manager.remove(req)
            s.finished_reqs.add(req)  # released once no batch in flight computes it; its results are skipped
        self.outbox.send(TokensMsg(uids=[uid], tokens=[-1], finish=["abort"]))

    def stats(self) -> dict[str, int]:
        s = self.scheduler
        cm = s.cache_manager
        return {
            "running": len(s.decode_manager.running), "waiting": len(s.prefill_manager.pending),
            "requests": len(self.reqs), "num_pages": cm.num_pages, "free_pages": cm.free_pages,
            "cached_pages": len(cm.prefix_cache.cached_pages), "evictable_pages": cm.prefix_cache.evictable_pages,
            "prefix_hit_tokens": cm.hit_tokens,
        }

    def handle(self, msg: Any) -> None:
        if isinstance(msg, UserMsg):
            self.add(msg)
        elif isinstance(msg, AbortMsg):
            self.abort(msg.uid)
        elif isinstance(msg, StatsMsg):
            self.outbox.send(StatsReplyMsg(uid=msg.uid, stats=self.stats(), errors=self.scheduler.check_integrity()))
        else:
            logger.error("scheduler: ignored a %s (not for the scheduler)", type(msg).__name__)

    # -- output
    def emit(self, fwd: ForwardInput, out: Any) -> None:
        """Process a finished batch and send each request's new token (and how it finished, if it did)."""
        s = self.scheduler
        skipped = set(s.finished_reqs)  # finished or aborted before: their results are not theirs to send
        s._process(fwd, out)
        uids, tokens, finish = [], [], []
        for i, req in enumerate(fwd.batch.reqs):
            if fwd.chunked[i] or req in skipped:
                continue
            token = req.input_ids[-1]
            reason = None
            if req in s.finished_reqs:
                eos = not req.sampling_params.ignore_eos and token in s.eos_ids
                reason = "stop" if eos else "length"
                self.reqs.pop(req.uid, None)
            uids.append(req.uid)
            tokens.append(token)
            finish.append(reason)
        if uids:
            self.outbox.send(TokensMsg(uids=uids, tokens=tokens, finish=finish))

    # -- the loop
    def step(self, block: bool = True) -> None:
        """Take the input waiting (waiting for some only when there is nothing to run and `block`), run one batch,
        send the results of the one before it (overlap) or its own."""
        s = self.scheduler
        idle = self._last is None and not s.has_work and not s.finished_reqs
        msgs = self.inbox.recv(None if idle and block else 0)
        if self.mirror is not None:
            self.mirror(msgs)
        self.step_with(msgs)

    def step_with(self, msgs: list[Any]) -> None:
        """One step on these messages (another rank's step, under tensor parallelism)."""
        s = self.scheduler
        for msg in msgs:
            self.handle(msg)
        fwd = s._schedule_next_batch()
        ongoing = (fwd, s._forward(fwd)) if fwd is not None else None
        if not ENV.DISABLE_OVERLAP_SCHEDULING.value:  # the last batch's results are sent while this one runs
            if self._last is not None:
                self.emit(*self._last)
            s._release_finished(ongoing[0] if ongoing is not None else None)
            self._last = ongoing
        else:
            if ongoing is not None:
                self.emit(*ongoing)
            s._release_finished(None)

    def serve_forever(self) -> None:
        with stream_ctx(self.scheduler.engine.stream), torch.inference_mode():
            while True:
                self.step()


class _Nowhere:
    """The outbox of a rank other than 0: what it would send, rank 0 sends."""

    def send(self, msg: Any) -> None:
        pass

"""emit, "for each request of the batch" (fwd.batch.reqs): the loop runs over fwd.batch.padded_reqs, so a batch
padded with dummy requests for a CUDA graph reads past fwd.chunked."""

from __future__ import annotations

from typing import Any

from minisgl.message import TokensMsg
from minisgl.scheduler.scheduler import ForwardInput


class SchedulerIO:
    def emit(self, fwd: ForwardInput, out: Any) -> None:
        """Process a finished batch and send each request's new token (and how it finished, if it did)."""
        s = self.scheduler
        skipped = set(s.finished_reqs)  # finished or aborted before: their results are not theirs to send
        s._process(fwd, out)
        uids, tokens, finish = [], [], []
        for i, req in enumerate(fwd.batch.padded_reqs):
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

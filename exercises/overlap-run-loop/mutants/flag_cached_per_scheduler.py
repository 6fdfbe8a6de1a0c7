"""ENV flag, "read it once, at the start of each call": read at the first call only and kept on the scheduler (a later call keeps that mode)."""

from __future__ import annotations

import torch

from minisgl.env import ENV
from minisgl.utils import stream_ctx


class Scheduler:
    def run_until_idle(self) -> None:
        """Run batches until every request has finished."""
        if not hasattr(self, '_overlap_mode'):
            self._overlap_mode = not ENV.DISABLE_OVERLAP_SCHEDULING.value
        overlap = self._overlap_mode
        last: tuple[ForwardInput, ForwardOutput] | None = None
        with stream_ctx(self.engine.stream), torch.inference_mode():
            while True:
                fwd = self._schedule_next_batch()
                ongoing = (fwd, self._forward(fwd)) if fwd is not None else None
                processed = False
                if overlap:  # the last batch's results are read while this one runs
                    if last is not None:
                        self._process(*last)
                        processed = True
                    self._release_finished(ongoing[0] if ongoing is not None else None)
                    last = ongoing
                elif ongoing is not None:
                    self._process(*ongoing)
                    self._release_finished(None)
                    processed = True
                if ongoing is None and not processed:
                    break  # idle: nothing ran and nothing finished that could free room
        if self.has_work:
            raise RuntimeError("scheduler stopped with requests left: " + ", ".join(
                repr(r) for r in list(self.prefill_manager.pending) + list(self.decode_manager.running.values())))

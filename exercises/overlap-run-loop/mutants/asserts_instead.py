""""raise RuntimeError saying so": requests left are caught by an assert (AssertionError), not a RuntimeError."""


class Scheduler:
    def run_until_idle(self):
        overlap = not ENV.DISABLE_OVERLAP_SCHEDULING.value
        last = None
        with stream_ctx(self.engine.stream), torch.inference_mode():
            while True:
                fwd = self._schedule_next_batch()
                ongoing = (fwd, self._forward(fwd)) if fwd is not None else None
                processed = False
                if overlap:
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
                    break
        assert not self.has_work, "scheduler stopped with requests left"

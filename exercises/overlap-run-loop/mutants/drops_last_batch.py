"""The loop stops as soon as nothing more can be scheduled: with overlap, the last batch's results are never read."""


class Scheduler:
    def run_until_idle(self):
        overlap = not ENV.DISABLE_OVERLAP_SCHEDULING.value
        last = None
        with stream_ctx(self.engine.stream), torch.inference_mode():
            while True:
                fwd = self._schedule_next_batch()
                if fwd is None:
                    break
                ongoing = (fwd, self._forward(fwd))
                if overlap:
                    if last is not None:
                        self._process(*last)
                    self._release_finished(ongoing[0])
                    last = ongoing
                else:
                    self._process(*ongoing)
                    self._release_finished(None)
        if self.has_work:
            raise RuntimeError("scheduler stopped with requests left")

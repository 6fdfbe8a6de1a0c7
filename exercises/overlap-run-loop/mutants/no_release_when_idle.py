"""With overlap, "release on every step, also one that launched nothing": the release is skipped in a step that
launched nothing, so the last batch's finished requests are never given back."""


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
                    if ongoing is not None:
                        self._release_finished(ongoing[0])
                    last = ongoing
                elif ongoing is not None:
                    self._process(*ongoing)
                    self._release_finished(None)
                    processed = True
                if ongoing is None and not processed:
                    break
        if self.has_work:
            raise RuntimeError("scheduler stopped with requests left")

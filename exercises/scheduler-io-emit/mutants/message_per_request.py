"""emit, "send one TokensMsg": one message per request instead of one per batch."""


class SchedulerIO:
    def emit(self, fwd, out):
        s = self.scheduler
        skipped = set(s.finished_reqs)
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
            self.outbox.send(TokensMsg(uids=[req.uid], tokens=[token], finish=[reason]))

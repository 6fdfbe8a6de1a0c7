"""emit, "note which requests are in s.finished_reqs before processing": the set is read after _process,
so every request that finishes in this batch is skipped: its last token and reason are never sent."""


class SchedulerIO:
    def emit(self, fwd, out):
        s = self.scheduler
        s._process(fwd, out)
        skipped = set(s.finished_reqs)
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

"""emit, "in the batch's order": the message lists the requests sorted by uid."""


class SchedulerIO:
    def emit(self, fwd, out):
        s = self.scheduler
        skipped = set(s.finished_reqs)
        s._process(fwd, out)
        uids, tokens, finish = [], [], []
        for i, req in sorted(enumerate(fwd.batch.reqs), key=lambda p: p[1].uid):
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

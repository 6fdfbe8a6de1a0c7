"""emit, "call s._process(fwd, out) (exactly once)": the tokens are read from out directly and _process is never
called, so no token is appended and no request ever finishes."""


class SchedulerIO:
    def emit(self, fwd, out):
        s = self.scheduler
        skipped = set(s.finished_reqs)
        out.copy_done.synchronize()
        sampled = out.next_tokens_cpu.tolist()
        uids, tokens, finish = [], [], []
        for i, req in enumerate(fwd.batch.reqs):
            if fwd.chunked[i] or req in skipped:
                continue
            token = sampled[i]
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

"""emit, "'stop' ... (even when it is also its last allowed token)": a request that reached max_tokens is
"length" whatever its token."""


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
                full = len(req.input_ids) - req.prompt_len >= req.output_len
                eos = not full and not req.sampling_params.ignore_eos and token in s.eos_ids
                reason = "stop" if eos else "length"
                self.reqs.pop(req.uid, None)
            uids.append(req.uid)
            tokens.append(token)
            finish.append(reason)
        if uids:
            self.outbox.send(TokensMsg(uids=uids, tokens=tokens, finish=finish))

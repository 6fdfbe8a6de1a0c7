"""The loop goes on while requests are pending, budget or not: a request reached with no budget left is
admitted (its pages reserved) and put in the batch with an empty chunk."""


class PrefillManager:
    def schedule_next_batch(self):
        budget = self.chunk_budget
        reqs = []
        while self.pending:
            req = self.pending[0]
            if req.uid not in self.admitted and not self._try_admit(req):
                break
            remaining = req.prompt_len - req.cached_len
            chunk = min(remaining, budget)
            req.device_len = req.cached_len + chunk
            req.chunked = chunk < remaining
            reqs.append(req)
            budget -= chunk
            if req.chunked:
                break
            self.pending.popleft()
        return Batch(reqs=reqs, phase="prefill") if reqs else None

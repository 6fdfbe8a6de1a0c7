"""The chunk is taken from the whole prompt (prompt_len), forgetting the tokens already computed or cached."""


class PrefillManager:
    def schedule_next_batch(self):
        budget = self.chunk_budget
        reqs = []
        while self.pending and budget > 0:
            req = self.pending[0]
            if req.uid not in self.admitted and not self._try_admit(req):
                break
            remaining = req.prompt_len
            chunk = min(remaining, budget)
            req.device_len = req.cached_len + chunk
            req.chunked = chunk < req.prompt_len - req.cached_len
            reqs.append(req)
            budget -= chunk
            if not req.chunked:
                self.pending.popleft()
        return Batch(reqs=reqs, phase="prefill") if reqs else None

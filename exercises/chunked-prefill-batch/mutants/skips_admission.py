"""Rule 2, "a request that is not admitted yet is admitted with self._try_admit(req)": it is never admitted
(no page-table row, nothing reserved, not in self.admitted)."""


class PrefillManager:
    def schedule_next_batch(self):
        budget = self.chunk_budget
        reqs = []
        while self.pending and budget > 0:
            req = self.pending[0]
            remaining = req.prompt_len - req.cached_len
            chunk = min(remaining, budget)
            req.device_len = req.cached_len + chunk
            req.chunked = chunk < remaining
            reqs.append(req)
            budget -= chunk
            if not req.chunked:
                self.pending.popleft()
        return Batch(reqs=reqs, phase="prefill") if reqs else None

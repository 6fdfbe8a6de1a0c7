"""A correct result handling with helper methods of its own (the unit tests call it on a real Scheduler object, so
a helper is found): one decides whether a request is done, one releases a request."""


class Scheduler:
    def _is_done(self, req, token):
        if len(req.input_ids) - req.prompt_len >= req.output_len:
            return True
        return token in self.eos_ids and not req.sampling_params.ignore_eos

    def _give_back(self, req):
        self.prefill_manager.finish(req)
        self.table_manager.free(req.table_idx)
        self.cache_manager.release(req)
        self.finished_reqs.remove(req)

    def _process(self, fwd, out):
        out.copy_done.synchronize()
        tokens = out.next_tokens_cpu.tolist()
        for i, req in enumerate(fwd.batch.reqs):
            if fwd.chunked[i] or req in self.finished_reqs:
                continue
            req.input_ids.append(tokens[i])
            if self._is_done(req, tokens[i]):
                self.finished_reqs.add(req)
                self.decode_manager.remove(req)

    def _release_finished(self, ongoing):
        busy = [] if ongoing is None else ongoing.batch.reqs
        for req in sorted(self.finished_reqs, key=lambda r: r.uid):
            if not any(req is q for q in busy):
                self._give_back(req)

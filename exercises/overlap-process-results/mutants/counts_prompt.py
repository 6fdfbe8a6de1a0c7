""""It is done when it has output_len new tokens": it counts the prompt too (len(input_ids) >= output_len), so a
request with a long prompt is done at its first token."""


class Scheduler:
    def _process(self, fwd, out):
        out.copy_done.synchronize()
        tokens = out.next_tokens_cpu.tolist()
        for i, req in enumerate(fwd.batch.reqs):
            if fwd.chunked[i] or req in self.finished_reqs:
                continue
            token = tokens[i]
            req.input_ids.append(token)
            done = len(req.input_ids) >= req.output_len
            if not req.sampling_params.ignore_eos and token in self.eos_ids:
                done = True
            if done:
                self.finished_reqs.add(req)
                self.decode_manager.remove(req)

    def _release_finished(self, ongoing):
        busy = set(ongoing.batch.reqs) if ongoing is not None else set()
        for req in sorted(self.finished_reqs, key=lambda r: r.uid):
            if req in busy:
                continue
            self.finished_reqs.discard(req)
            self.cache_manager.release(req)
            self.table_manager.free(req.table_idx)
            self.prefill_manager.finish(req)

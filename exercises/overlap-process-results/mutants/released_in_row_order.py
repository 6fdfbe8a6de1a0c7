""""Release them in uid order": they are released in table_idx (row) order."""

from __future__ import annotations

from minisgl.engine.engine import ForwardOutput
from minisgl.scheduler.scheduler import ForwardInput


class Scheduler:
    def _process(self, fwd: ForwardInput, out: ForwardOutput) -> None:
        out.copy_done.synchronize()
        tokens = out.next_tokens_cpu.tolist()
        for i, req in enumerate(fwd.batch.reqs):
            if fwd.chunked[i] or req in self.finished_reqs:
                continue
            token = tokens[i]
            req.input_ids.append(token)
            done = len(req.input_ids) - req.prompt_len >= req.output_len
            if not req.sampling_params.ignore_eos and token in self.eos_ids:
                done = True
            if done:
                self.finished_reqs.add(req)
                self.decode_manager.remove(req)

    def _release_finished(self, ongoing: ForwardInput | None) -> None:
        busy = set(ongoing.batch.reqs) if ongoing is not None else set()
        for req in sorted(self.finished_reqs, key=lambda r: r.table_idx):
            if req in busy:
                continue  # its KV is still being written by the batch in flight
            self.finished_reqs.discard(req)
            self.cache_manager.release(req)
            self.table_manager.free(req.table_idx)
            self.prefill_manager.finish(req)

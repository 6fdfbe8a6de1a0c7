"""Continuous batching: prefill batches first, then decode batches; with overlap scheduling, the next batch is
prepared and launched before the last one's results are processed."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from minisgl.core import Batch, Req
from minisgl.engine.engine import Engine, ForwardOutput
from minisgl.env import ENV
from minisgl.scheduler.cache import CacheManager
from minisgl.scheduler.decode import DecodeManager
from minisgl.scheduler.prefill import PrefillManager
from minisgl.scheduler.table import TableManager
from minisgl.utils import init_logger, is_cuda, stream_ctx

logger = init_logger(__name__)


@dataclass
class ForwardInput:
    batch: Batch
    chunked: list[bool]  # per request, as it was when the batch was made
    write_rows: torch.Tensor  # where each sampled token goes in the token pool
    write_cols: torch.Tensor


def prepare_inputs(batch: Batch, token_pool: torch.Tensor, page_table: torch.Tensor) -> None:
    """The batch's flat inputs, one row per token computed now (positions [cached_len, device_len) of each padded
    request, in order): its id from the token pool, its position, and its KV slot (out_loc) from the page table."""
    rows: list[int] = []
    cols: list[int] = []
    for req in batch.padded_reqs:
        rows.extend([req.table_idx] * req.extend_len)
        cols.extend(range(req.cached_len, req.device_len))
    dev = page_table.device
    row_t = torch.tensor(rows, dtype=torch.int64).to(dev, non_blocking=True)
    col_t = torch.tensor(cols, dtype=torch.int64).to(dev, non_blocking=True)
    batch.positions = col_t.to(torch.int32)
    batch.input_ids = token_pool[row_t, col_t]
    batch.out_loc = page_table[row_t, col_t]


class Scheduler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.device = engine.device
        cfg = engine.config
        # token ids of every running request (row = page-table row); inputs are gathered from here on the device,
        # so a decode step never waits for the host to learn the previous token
        self.token_pool = torch.zeros(engine.max_running_req + 1, engine.max_seq_len, dtype=torch.int32,
                                      device=self.device)
        self.table_manager = TableManager(engine.max_running_req)
        self.cache_manager = CacheManager(engine.num_pages, engine.page_size, cfg.cache_type, engine.page_table,
                                          self.device)
        self.prefill_manager = PrefillManager(self.cache_manager, self.table_manager, self._write_prompt,
                                              cfg.chunked_prefill_size)
        self.decode_manager = DecodeManager()
        self.finished_reqs: set[Req] = set()
        self.eos_ids = set(engine.model_config.eos_token_ids)

    # -- requests
    def add_request(self, req: Req) -> None:
        self.prefill_manager.add(req)

    @property
    def has_work(self) -> bool:
        return bool(self.prefill_manager.pending or self.decode_manager.running)

    def _write_prompt(self, req: Req) -> None:
        ids = torch.tensor(req.input_ids, dtype=torch.int32)
        self.token_pool[req.table_idx, : len(ids)] = ids.to(self.device, non_blocking=is_cuda(self.device))

    # -- one step
    def _schedule_next_batch(self) -> ForwardInput | None:
        batch = self.prefill_manager.schedule_next_batch() or self.decode_manager.schedule_next_batch()
        return self._prepare_batch(batch) if batch is not None else None

    def _prepare_batch(self, batch: Batch) -> ForwardInput:
        self.engine.graph_runner.pad_batch(batch)
        self.cache_manager.allocate(batch.reqs)
        prepare_inputs(batch, self.token_pool, self.engine.page_table)
        self.engine.attn_backend.prepare_metadata(batch)
        dummy = self.engine.dummy_req.table_idx
        # a chunk's sampled token is dropped: written to the dummy row's unused last column
        w_rows = [dummy if r.chunked else r.table_idx for r in batch.reqs]
        w_cols = [self.engine.max_seq_len - 1 if r.chunked else r.device_len for r in batch.reqs]
        dev = self.device
        return ForwardInput(
            batch=batch,
            chunked=[r.chunked for r in batch.reqs],
            write_rows=torch.tensor(w_rows, dtype=torch.int64).to(dev, non_blocking=True),
            write_cols=torch.tensor(w_cols, dtype=torch.int64).to(dev, non_blocking=True),
        )

    def _forward(self, fwd: ForwardInput) -> ForwardOutput:
        out = self.engine.forward_batch(fwd.batch)
        self.token_pool[fwd.write_rows, fwd.write_cols] = out.next_tokens
        self.decode_manager.add_after_forward(fwd.batch.reqs)
        return out

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
        for req in sorted(self.finished_reqs, key=lambda r: r.uid):  # uid order: pages freed the same way every run
            if req in busy:
                continue  # its KV is still being written by the batch in flight
            self.finished_reqs.discard(req)
            self.cache_manager.release(req)
            self.table_manager.free(req.table_idx)
            self.prefill_manager.finish(req)

    # -- loops
    def run_until_idle(self) -> None:
        """Run batches until every request has finished."""
        overlap = not ENV.DISABLE_OVERLAP_SCHEDULING.value
        last: tuple[ForwardInput, ForwardOutput] | None = None
        with stream_ctx(self.engine.stream), torch.inference_mode():
            while True:
                fwd = self._schedule_next_batch()
                ongoing = (fwd, self._forward(fwd)) if fwd is not None else None
                processed = False
                if overlap:  # the last batch's results are read while this one runs
                    if last is not None:
                        self._process(*last)
                        processed = True
                    self._release_finished(ongoing[0] if ongoing is not None else None)
                    last = ongoing
                elif ongoing is not None:
                    self._process(*ongoing)
                    self._release_finished(None)
                    processed = True
                if ongoing is None and not processed:
                    break  # idle: nothing ran and nothing finished that could free room
        if self.has_work:
            raise RuntimeError("scheduler stopped with requests left: " + ", ".join(
                repr(r) for r in list(self.prefill_manager.pending) + list(self.decode_manager.running.values())))

    def check_integrity(self) -> list[str]:
        """Errors in the KV bookkeeping (empty when sound); with nothing running every page is free or cached."""
        running = list(self.prefill_manager.admitted.values())
        return self.cache_manager.integrity_errors(running)

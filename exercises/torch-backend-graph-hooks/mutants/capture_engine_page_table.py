"""prepare_for_capture, "views of the capture buffers": the page table views the engine's own page
table (self.page_table) instead of capture.page_table."""

from minisgl.attention.torch_backend import TorchAttnMetadata


class TorchAttnBackend:
    def prepare_for_capture(self, batch):
        bs = batch.size
        cap = self.capture
        batch.attn_metadata = TorchAttnMetadata(
            cu_seqlens_q=cap.cu_seqlens_q[: bs + 1],
            cache_seqlens=cap.seq_lens[:bs],
            page_table=self.page_table[:bs, :],
            max_seqlen_q=1,
        )

    def prepare_for_replay(self, batch):
        metadata, bs = batch.attn_metadata, batch.padded_size
        table_len = metadata.page_table.size(1)
        self.capture.seq_lens[:bs].copy_(metadata.cache_seqlens)
        self.capture.page_table[:bs, :table_len].copy_(metadata.page_table)

"""prepare_for_replay, "copy (into the buffers, never replacing them)": capture.page_table is rebound to a
new, full-width tensor holding this step's table instead of written into."""

from minisgl.attention.torch_backend import TorchAttnMetadata


class TorchAttnBackend:
    def prepare_for_capture(self, batch):
        bs = batch.size
        cap = self.capture
        batch.attn_metadata = TorchAttnMetadata(
            cu_seqlens_q=cap.cu_seqlens_q[: bs + 1],
            cache_seqlens=cap.seq_lens[:bs],
            page_table=cap.page_table[:bs, :],
            max_seqlen_q=1,
        )

    def prepare_for_replay(self, batch):
        metadata, bs = batch.attn_metadata, batch.padded_size
        table_len = metadata.page_table.size(1)
        self.capture.seq_lens[:bs].copy_(metadata.cache_seqlens)
        table = self.capture.page_table.clone()
        table[:bs, :table_len] = metadata.page_table
        self.capture.page_table = table

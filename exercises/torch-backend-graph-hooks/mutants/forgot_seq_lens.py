"""prepare_for_replay, "copy its cache_seqlens": only the page table is copied, so the graph attends over
the KV lengths of the capture (or of an earlier step)."""

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
        self.capture.page_table[:bs, :table_len].copy_(metadata.page_table)

"""prepare_for_replay, "the first table_len columns" (the step's page table is only as wide as the longest
request needs): the table is copied into the full rows, which fails unless it happens to be max_seq_len wide."""

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
        self.capture.page_table[:bs].copy_(metadata.page_table)

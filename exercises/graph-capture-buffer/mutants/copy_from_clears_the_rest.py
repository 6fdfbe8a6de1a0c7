"""copy_from, "the elements beyond stay as they are": the buffers are zeroed first (to "clean" them), so the
rows beyond batch.padded_size lose their values."""


class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.padded_size)
        batch.input_ids, batch.out_loc, batch.positions = self.input_ids[s], self.out_loc[s], self.positions[s]

    def copy_from(self, batch):
        s = slice(batch.padded_size)
        for buf in (self.input_ids, self.out_loc, self.positions):
            buf.zero_()
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc
        self.positions[s] = batch.positions

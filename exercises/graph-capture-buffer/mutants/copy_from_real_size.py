"""copy_from, "the first batch.padded_size elements": only the real requests' batch.size rows are copied;
the padded rows keep stale values."""


class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.padded_size)
        batch.input_ids, batch.out_loc, batch.positions = self.input_ids[s], self.out_loc[s], self.positions[s]

    def copy_from(self, batch):
        s = slice(batch.size)
        self.input_ids[s] = batch.input_ids[s]
        self.out_loc[s] = batch.out_loc[s]
        self.positions[s] = batch.positions[s]

"""set_batch, "the first batch.padded_size elements": slices to batch.size instead."""


class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.size)
        batch.input_ids, batch.out_loc, batch.positions = self.input_ids[s], self.out_loc[s], self.positions[s]

    def copy_from(self, batch):
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc
        self.positions[s] = batch.positions

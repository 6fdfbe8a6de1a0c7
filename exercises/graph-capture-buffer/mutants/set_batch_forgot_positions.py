"""set_batch, "point the batch's input_ids, out_loc and positions at the buffers": positions is left out, so
the recorded forward reads the batch's own positions tensor, never the buffer."""


class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.padded_size)
        batch.input_ids, batch.out_loc = self.input_ids[s], self.out_loc[s]

    def copy_from(self, batch):
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc
        self.positions[s] = batch.positions

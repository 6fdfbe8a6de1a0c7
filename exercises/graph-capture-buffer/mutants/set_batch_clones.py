"""set_batch, "views, not copies": the batch gets copies of the buffers, so the recorded forward
never sees what copy_from writes later."""


class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.padded_size)
        batch.input_ids = self.input_ids[s].clone()
        batch.out_loc = self.out_loc[s].clone()
        batch.positions = self.positions[s].clone()

    def copy_from(self, batch):
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc
        self.positions[s] = batch.positions

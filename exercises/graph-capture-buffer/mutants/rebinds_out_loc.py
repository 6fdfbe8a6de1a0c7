"""copy_from, "into them: assigning a new tensor would leave the graph reading the old one": out_loc is
rebound to a new tensor instead of written into."""


class GraphCaptureBuffer:
    def set_batch(self, batch):
        s = slice(batch.padded_size)
        batch.input_ids, batch.out_loc, batch.positions = self.input_ids[s], self.out_loc[s], self.positions[s]

    def copy_from(self, batch):
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc = batch.out_loc.clone()
        self.positions[s] = batch.positions

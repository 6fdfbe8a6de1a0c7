"""complete_one on a chunked request, "then only cached_len moves": it also clears chunked (the scheduler sets chunked, complete_one must not)."""


class Req:
    def __post_init__(self):
        self.prompt_len = len(self.input_ids)
        self.device_len = len(self.input_ids)
        self.max_device_len = len(self.input_ids) + self.output_len
        self.matched_len = 0
        self.chunked = False

    @property
    def extend_len(self):
        return self.device_len - self.cached_len

    @property
    def remain_len(self):
        return self.max_device_len - self.device_len

    @property
    def can_decode(self):
        return self.remain_len > 0

    @property
    def output_ids(self):
        return self.input_ids[self.prompt_len :]

    def complete_one(self):
        if self.chunked:
            self.cached_len = self.device_len
            self.chunked = False
            return
        self.cached_len = self.device_len
        self.device_len += 1

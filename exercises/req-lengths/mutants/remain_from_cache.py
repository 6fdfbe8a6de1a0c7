"""remain_len, "max_device_len - device_len": remain_len counts from cached_len, so it is too large by extend_len."""


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
        return self.max_device_len - self.cached_len

    @property
    def can_decode(self):
        return self.remain_len > 0

    @property
    def output_ids(self):
        return self.input_ids[self.prompt_len :]

    def complete_one(self):
        if self.chunked:
            self.cached_len = self.device_len
            return
        self.cached_len = self.device_len
        self.device_len += 1

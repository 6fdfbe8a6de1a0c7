"""top_k, "either -1 (off) or at least 1": a cap is added, so top_k above 1000 is refused."""


class SamplingParams:
    def validate(self):
        if not isinstance(self.max_tokens, int) or self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")
        if self.top_k == 0 or self.top_k < -1 or self.top_k > 1000:
            raise ValueError(f"top_k must be -1 (off) or >= 1, got {self.top_k!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")

    @property
    def is_greedy(self):
        return self.temperature == 0.0 or self.top_k == 1

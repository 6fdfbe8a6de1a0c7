"""cos_sin, "positions ... in any order, repeats allowed": the positions are sorted first (as if a batch's positions
were ascending), so the rows come back in the wrong order."""

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
    def cos_sin(self, positions):
        pos = positions.long().sort().values
        return self._cos[pos][:, None, :], self._sin[pos][:, None, :]

    @staticmethod
    def forward(cos_sin, q, k):
        cos, sin = cos_sin
        return q * cos + _rot(q) * sin, k * cos + _rot(k) * sin

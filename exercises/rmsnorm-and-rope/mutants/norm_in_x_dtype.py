"""In float32, "normalise ... in float32": the mean square is taken in x's own dtype (no upcast), so float16
inputs overflow or round differently."""

import torch


class RMSNorm:
    def forward(self, x):
        dtype = x.dtype
        h = x
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self._eps)
        return self.weight * h.to(dtype)


def _rot(x):
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


class RotaryEmbedding:
    def cos_sin(self, positions):
        pos = positions.long()
        return self._cos[pos][:, None, :], self._sin[pos][:, None, :]

    @staticmethod
    def forward(cos_sin, q, k):
        cos, sin = cos_sin
        return q * cos + _rot(q) * sin, k * cos + _rot(k) * sin

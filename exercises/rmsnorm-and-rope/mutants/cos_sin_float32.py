"""cos_sin, "the tables are already in the model's dtype, that of q and k: no cast is needed": the rows are cast to
float32, so half-precision q and k come back promoted to float32."""

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
        pos = positions.long()
        return self._cos[pos][:, None, :].float(), self._sin[pos][:, None, :].float()

    @staticmethod
    def forward(cos_sin, q, k):
        cos, sin = cos_sin
        return q * cos + _rot(q) * sin, k * cos + _rot(k) * sin

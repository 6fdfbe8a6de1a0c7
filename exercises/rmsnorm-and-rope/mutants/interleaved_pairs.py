"""pairs are neighbours (2i, 2i+1), GPT-J style, instead of (i, i + D/2)."""

import torch


class RMSNorm:
    def forward(self, x):
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self._eps)
        return self.weight * h.to(dtype)


def _rot(x):
    pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).reshape(x.shape)


class RotaryEmbedding:
    def cos_sin(self, positions):
        pos = positions.long()
        return self._cos[pos][:, None, :], self._sin[pos][:, None, :]

    @staticmethod
    def forward(cos_sin, q, k):
        cos, sin = cos_sin
        return q * cos + _rot(q) * sin, k * cos + _rot(k) * sin

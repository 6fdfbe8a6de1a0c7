from __future__ import annotations

import math

import torch

from minisgl.layers.base import BaseOP


def _inv_freq(head_dim: int, base: float, scaling: dict | None) -> torch.Tensor:
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    if not scaling or scaling.get("rope_type", scaling.get("type", "default")) == "default":
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind != "llama3":
        raise NotImplementedError(f"rope scaling {kind!r} is not supported (only default and llama3)")
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_len = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


class RotaryEmbedding(BaseOP):
    """Rotate-half RoPE with a cos/sin table indexed by position, computed as Hugging Face does (float32)."""

    def __init__(self, head_dim: int, max_position: int, base: float, scaling: dict | None,
                 dtype: torch.dtype, device: torch.device):
        inv_freq = _inv_freq(head_dim, base, scaling)
        t = torch.arange(max_position, dtype=torch.int64).float()
        freqs = t[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        self._cos = emb.cos().to(dtype=dtype, device=device)
        self._sin = emb.sin().to(dtype=dtype, device=device)

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The table rows of these positions, [T, 1, D] each: looked up once per forward, used by every layer."""
        pos = positions.long()
        return self._cos[pos][:, None, :], self._sin[pos][:, None, :]

    @staticmethod
    def forward(cos_sin: tuple[torch.Tensor, torch.Tensor], q: torch.Tensor,
                k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q: [T, Hq, D], k: [T, Hkv, D]; cos_sin from cos_sin(positions)."""
        cos, sin = cos_sin
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)

from __future__ import annotations

import torch
import torch.nn.functional as F


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Causal attention aligned bottom-right: q [n, Hq, D] are the last n of the L keys k/v [L, Hkv, D]."""
    n, hq, d = q.shape
    L, hkv = k.shape[0], k.shape[1]
    g = hq // hkv  # query heads per KV head (GQA)
    qh = q.reshape(n, hkv, g, d).permute(1, 2, 0, 3)  # [Hkv, G, n, D]
    kh = k.permute(1, 2, 0).unsqueeze(1)  # [Hkv, 1, D, L]
    vh = v.permute(1, 0, 2).unsqueeze(1)  # [Hkv, 1, L, D]
    scores = torch.matmul(qh, kh).float() * scale  # [Hkv, G, n, L]
    if n > 1:
        allowed = torch.arange(L, device=q.device)[None, :] <= torch.arange(L - n, L, device=q.device)[:, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
    probs = torch.softmax(scores, dim=-1).to(v.dtype)
    out = torch.matmul(probs, vh)  # [Hkv, G, n, D]
    return out.permute(2, 0, 1, 3).reshape(n, hq, d)


def attend_decode_padded(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seq_lens: torch.Tensor,
                         scale: float) -> torch.Tensor:
    """One query per request over a padded key window. q [B, Hq, D]; k/v [B, W, Hkv, D]; keys at >= seq_len masked.
    No host sync and static shapes: capturable in a CUDA graph."""
    b, hq, d = q.shape
    w = k.shape[1]
    valid = torch.arange(w, device=q.device)[None, :] < seq_lens[:, None].to(torch.int64)  # [B, W]
    out = F.scaled_dot_product_attention(q[:, :, None, :], k.transpose(1, 2), v.transpose(1, 2),
                                         attn_mask=valid[:, None, None, :], scale=scale, enable_gqa=True)
    return out.reshape(b, hq, d)


def decode_mask(seq_lens: torch.Tensor, width: int, dtype: torch.dtype) -> torch.Tensor:
    """[B, 1, 1, W] additive mask of a padded key window: 0 for keys at positions < seq_len, -inf past it (what
    scaled_dot_product_attention makes of attend_decode_padded's boolean mask, made once for all layers)."""
    valid = torch.arange(width, device=seq_lens.device)[None, :] < seq_lens[:, None].to(torch.int64)
    mask = torch.zeros(valid.shape, dtype=dtype, device=seq_lens.device).masked_fill_(~valid, float("-inf"))
    return mask[:, None, None, :]


def attend_decode_masked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor,
                         scale: float) -> torch.Tensor:
    """attend_decode_padded with its mask made beforehand by decode_mask (in q's dtype). q [B, Hq, D];
    k/v [B, W, Hkv, D]."""
    b, hq, d = q.shape
    out = F.scaled_dot_product_attention(q.unsqueeze(2), k.transpose(1, 2), v.transpose(1, 2),
                                         attn_mask=mask, scale=scale, enable_gqa=True)
    return out.reshape(b, hq, d)

"""Causal, "the keys j = 0 .. L - n + i" only: the later keys are filled with -100 instead of -inf, so when the
visible scores are far below -100 the hidden keys take the weight."""

import torch
import torch.nn.functional as F


def attend(q, k, v, scale):
    n, hq, d = q.shape
    L, hkv = k.shape[0], k.shape[1]
    g = hq // hkv
    qh = q.reshape(n, hkv, g, d).permute(1, 2, 0, 3)
    kh = k.permute(1, 2, 0).unsqueeze(1)
    vh = v.permute(1, 0, 2).unsqueeze(1)
    scores = torch.matmul(qh, kh).float() * scale
    if n > 1:
        allowed = torch.arange(L, device=q.device)[None, :] <= torch.arange(L - n, L, device=q.device)[:, None]
        scores = scores.masked_fill(~allowed, -100.0)
    probs = torch.softmax(scores, dim=-1).to(v.dtype)
    out = torch.matmul(probs, vh)
    return out.permute(2, 0, 1, 3).reshape(n, hq, d)

"""The scale, "scale: the softmax scale (1 / sqrt(D) in the engine)": the scale is recomputed as 1 / sqrt(D) and the
argument ignored."""

import torch


def attend(q, k, v, scale):
    n, hq, d = q.shape
    L, hkv = k.shape[0], k.shape[1]
    g = hq // hkv
    qh = q.reshape(n, hkv, g, d).permute(1, 2, 0, 3)
    kh = k.permute(1, 2, 0).unsqueeze(1)
    vh = v.permute(1, 0, 2).unsqueeze(1)
    scores = torch.matmul(qh, kh).float() * d**-0.5
    if n > 1:
        allowed = torch.arange(L, device=q.device)[None, :] <= torch.arange(L - n, L, device=q.device)[:, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
    probs = torch.softmax(scores, dim=-1).to(v.dtype)
    out = torch.matmul(probs, vh)
    return out.permute(2, 0, 1, 3).reshape(n, hq, d)

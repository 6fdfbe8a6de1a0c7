"""The scale, "scores[j] = scale * (q[i, h] · k[j, h_kv])": a decode step (n == 1) calls
F.scaled_dot_product_attention without passing scale, so decode uses 1 / sqrt(D) whatever the argument."""

import torch
import torch.nn.functional as F


def attend(q, k, v, scale):
    n, hq, d = q.shape
    L, hkv = k.shape[0], k.shape[1]
    g = hq // hkv
    if n == 1:
        qq = q.permute(1, 0, 2)
        kk = k.repeat_interleave(g, dim=1).permute(1, 0, 2)
        vv = v.repeat_interleave(g, dim=1).permute(1, 0, 2)
        return F.scaled_dot_product_attention(qq, kk, vv).permute(1, 0, 2)
    qh = q.reshape(n, hkv, g, d).permute(1, 2, 0, 3)
    kh = k.permute(1, 2, 0).unsqueeze(1)
    vh = v.permute(1, 0, 2).unsqueeze(1)
    scores = torch.matmul(qh, kh).float() * scale
    if n > 1:
        allowed = torch.arange(L, device=q.device)[None, :] <= torch.arange(L - n, L, device=q.device)[:, None]
        scores = scores.masked_fill(~allowed, float("-inf"))
    probs = torch.softmax(scores, dim=-1).to(v.dtype)
    out = torch.matmul(probs, vh)
    return out.permute(2, 0, 1, 3).reshape(n, hq, d)

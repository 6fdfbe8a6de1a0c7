"""A safetensors file as plain data (keys, metadata, and per tensor its dtype, shape and sha256 of its bytes), read
through any `safe_open`: the real (Rust) one with real torch, or the browser's numpy reader with the layer."""

from __future__ import annotations

import hashlib
from typing import Any


def _bytes(t: Any) -> bytes:
    if hasattr(t, "_a"):  # the layer's tensor: its numpy array
        return t._a.tobytes()
    import torch

    t = t.contiguous()
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()


def describe(safe_open: Any, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with safe_open(path, framework="pt", device="cpu") as f:
        out["keys"] = list(f.keys())
        out["metadata"] = f.metadata()
        tensors = {}
        for k in f.keys():
            try:
                t = f.get_tensor(k)
            except Exception as e:  # noqa: BLE001 - which error is compared
                tensors[k] = {"raised": type(e).__name__}
                continue
            tensors[k] = {"dtype": str(t.dtype), "shape": list(t.shape), "contiguous": t.is_contiguous(),
                          "sha256": hashlib.sha256(_bytes(t)).hexdigest()}
        out["tensors"] = tensors
    return out

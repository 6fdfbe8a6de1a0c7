"""Rule 4, "a tensor whose shape differs from its rows' shape ... nothing may be broadcast": only the first
dimension (the rows) is compared, so a [rows, 1] tensor broadcasts across every column of its rows."""

from __future__ import annotations

from pathlib import Path

import torch

from minisgl.models.base import BaseLLMModel
from minisgl.models.config import ModelLoadError
from minisgl.models.weight import _checkpoint_files


def load_weights(model: BaseLLMModel, folder: str | Path, device: torch.device) -> None:
    from safetensors import safe_open

    folder = Path(folder)
    params = model.state_dict()
    parts = model.weight_parts()
    # every (our name, first row) that must be filled, named by its checkpoint name
    expected: dict[str, tuple[str, int, int]] = dict(parts)
    merged_targets = {target for target, _, _ in parts.values()}
    for name, t in params.items():
        if name not in merged_targets:
            expected[name] = (name, 0, t.shape[0])
    seen: set[str] = set()
    for file in _checkpoint_files(folder):
        if not file.is_file():
            raise ModelLoadError(f"{file}: weight file listed in the index is missing")
        with safe_open(str(file), framework="pt", device="cpu") as f:
            for key in f.keys():
                if key not in expected:
                    continue  # e.g. rotary inv_freq, or the lm_head.weight of a tied model (the embedding's)
                target, start, rows = expected[key]
                src = f.get_tensor(key)
                dst = params[target][start : start + rows]
                if src.shape[0] != dst.shape[0]:
                    raise ModelLoadError(f"{file.name}: weight {key} has shape {tuple(src.shape)}, "
                                         f"the model expects {tuple(dst.shape)}")
                dst.copy_(src.to(dtype=dst.dtype, device=device))
                seen.add(key)
    missing = sorted(set(expected) - seen)
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ModelLoadError(f"{folder}: missing weights in the checkpoint: {', '.join(missing[:5])}{more}")

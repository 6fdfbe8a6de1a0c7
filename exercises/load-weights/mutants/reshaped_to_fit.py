"""Rule 4, "a tensor whose shape differs from its rows' shape ... nothing may be broadcast": only the element counts
are compared, and a tensor of the right size but the wrong shape (transposed) is reshaped into the rows."""

from pathlib import Path


def load_weights(model, folder, device):
    from safetensors import safe_open

    folder = Path(folder)
    params = model.state_dict()
    parts = model.weight_parts()
    expected = dict(parts)
    merged_targets = {target for target, _, _ in parts.values()}
    for name, t in params.items():
        if name not in merged_targets:
            expected[name] = (name, 0, t.shape[0])
    seen = set()
    for file in _checkpoint_files(folder):
        if not file.is_file():
            raise ModelLoadError(f"{file}: weight file listed in the index is missing")
        with safe_open(str(file), framework="pt", device="cpu") as f:
            for key in f.keys():
                if key not in expected:
                    continue
                target, start, rows = expected[key]
                src = f.get_tensor(key)
                dst = params[target][start : start + rows]
                if src.numel() != dst.numel():
                    raise ModelLoadError(f"{file.name}: weight {key} has shape {tuple(src.shape)}, "
                                         f"the model expects {tuple(dst.shape)}")
                dst.copy_(src.reshape(dst.shape).to(dtype=dst.dtype, device=device))
                seen.add(key)
    missing = sorted(set(expected) - seen)
    if missing:
        raise ModelLoadError(f"{folder}: missing weights in the checkpoint: {', '.join(missing[:5])}")

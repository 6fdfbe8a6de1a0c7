"""Rule 4, "the missing checkpoint names (at least the first five, in sorted order)": the first five in the model's
order are named, not the first five sorted."""

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
                if tuple(src.shape) != tuple(dst.shape):
                    raise ModelLoadError(f"{file.name}: weight {key} has shape {tuple(src.shape)}, "
                                         f"the model expects {tuple(dst.shape)}")
                dst.copy_(src.to(dtype=dst.dtype, device=device))
                seen.add(key)
    missing = [k for k in expected if k not in seen]
    if missing:
        raise ModelLoadError(f"{folder}: missing weights in the checkpoint: {', '.join(missing[:5])}")

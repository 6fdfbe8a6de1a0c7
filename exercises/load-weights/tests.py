"""Tests for load-weights: random checkpoints written here (one file or sharded, float32 or float64, extra keys,
biases, tied), every row checked; broken checkpoints and their errors; the tiny model resharded and generated."""

import dataclasses
import json
import shutil
import struct
import tempfile
from pathlib import Path

import torch

from judge.testing import PROMPT_IDS, eager_tokens, engine_device, expected, rng
from minisgl.models import ModelConfig, ModelLoadError, weight
from minisgl.models.llama import LlamaForCausalLM
from minisgl.models.qwen3 import Qwen3ForCausalLM
from minisgl.testing import tiny_model

CPU = torch.device("cpu")
TINY = tiny_model("qwen3")
BASE = ModelConfig.from_path(TINY)


def write_safetensors(path: Path, tensors: dict, dtype: str = "F32") -> None:
    """A safetensors file, written with the standard library (8-byte header size, JSON header, raw data)."""
    fmt = {"F32": "f", "F64": "d"}[dtype]
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        flat = t.reshape(-1).tolist()
        blob = struct.pack(f"<{len(flat)}{fmt}", *flat)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def write_checkpoint(folder: Path, tensors: dict, shards: int = 1, dtype: str = "F32") -> list[str]:
    """The tensors in `shards` files (with an index when more than one); returns the file names."""
    names = list(tensors)
    if shards == 1:
        write_safetensors(folder / "model.safetensors", tensors, dtype)
        return ["model.safetensors"]
    files = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    weight_map = {n: files[i % shards] for i, n in enumerate(names)}
    for file in files:
        write_safetensors(folder / file, {n: tensors[n] for n in names if weight_map[n] == file}, dtype)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return files


def pattern(g, *shape) -> torch.Tensor:
    """Distinct, position-dependent values (never zeros): arange-based, with a random scale and offset."""
    n = 1
    for s in shape:
        n *= s
    a, b = round(g.uniform(0.01, 0.09), 3), round(g.uniform(0.2, 0.9), 3)
    return ((torch.arange(n) % 89).float() * a + b).reshape(*shape)


def make_model(cfg: ModelConfig):
    cls = Qwen3ForCausalLM if cfg.architecture == "Qwen3ForCausalLM" else LlamaForCausalLM
    return cls(cfg, torch.float32, CPU)


def random_config(g, **changes) -> ModelConfig:
    kv, group = g.choice([1, 2]), g.choice([1, 2, 3])
    fields = dict(architecture=g.choice(["Qwen3ForCausalLM", "LlamaForCausalLM"]), num_layers=g.randint(1, 3),
                  hidden_size=g.choice([12, 20]), num_heads=kv * group, num_kv_heads=kv, head_dim=g.choice([6, 10]),
                  intermediate_size=g.choice([14, 22]), vocab_size=g.choice([30, 46]),
                  tie_word_embeddings=g.random() < 0.4, attention_bias=g.random() < 0.5, mlp_bias=g.random() < 0.5)
    fields.update(changes)
    return dataclasses.replace(BASE, **fields)


def hf_tensors(g, cfg: ModelConfig) -> dict:
    """A Hugging Face checkpoint for cfg: separate q/k/v and gate/up (and their biases), a few extra keys."""
    c = cfg
    h, q, kv, inter = c.hidden_size, c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
    t = {"model.embed_tokens.weight": pattern(g, c.vocab_size, h), "model.norm.weight": pattern(g, h),
         "lm_head.weight": pattern(g, c.vocab_size, h)}  # a tied model must skip lm_head.weight
    for i in range(c.num_layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = pattern(g, h)
        t[p + "post_attention_layernorm.weight"] = pattern(g, h)
        for name, rows in (("q", q), ("k", kv), ("v", kv)):
            t[p + f"self_attn.{name}_proj.weight"] = pattern(g, rows, h)
            if c.attention_bias:
                t[p + f"self_attn.{name}_proj.bias"] = pattern(g, rows)
        t[p + "self_attn.o_proj.weight"] = pattern(g, h, q)
        if c.attention_bias:
            t[p + "self_attn.o_proj.bias"] = pattern(g, h)
        if c.architecture == "Qwen3ForCausalLM":
            t[p + "self_attn.q_norm.weight"] = pattern(g, c.head_dim)
            t[p + "self_attn.k_norm.weight"] = pattern(g, c.head_dim)
        t[p + "self_attn.rotary_emb.inv_freq"] = pattern(g, c.head_dim // 2)  # not a weight: skipped
        for name in ("gate", "up"):
            t[p + f"mlp.{name}_proj.weight"] = pattern(g, inter, h)
            if c.mlp_bias:
                t[p + f"mlp.{name}_proj.bias"] = pattern(g, inter)
        t[p + "mlp.down_proj.weight"] = pattern(g, h, inter)
        if c.mlp_bias:
            t[p + "mlp.down_proj.bias"] = pattern(g, h)
    order = list(t)
    g.shuffle(order)  # a checkpoint's order is not the model's
    return {k: t[k] for k in order}


def where(cfg: ModelConfig, key: str):
    """Where a checkpoint tensor must land, by the rules of the statement (the test's own map): (our name, first
    row) or None for a key the model does not use."""
    c = cfg
    q, kv, inter = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
    if key.endswith("inv_freq") or (key == "lm_head.weight" and c.tie_word_embeddings):
        return None
    for name, start in (("q_proj", 0), ("k_proj", q), ("v_proj", q + kv)):
        if f".self_attn.{name}." in key:
            return key.replace(name, "qkv_proj"), start
    for name, start in (("gate_proj", 0), ("up_proj", inter)):
        if f".mlp.{name}." in key:
            return key.replace(name, "gate_up_proj"), start
    return key, 0


def check_every_row(model, cfg: ModelConfig, tensors: dict) -> None:
    state = model.state_dict()
    for key, src in tensors.items():
        spot = where(cfg, key)
        if spot is None:
            continue
        name, start = spot
        rows = state[name][start : start + src.shape[0]]
        same = torch.allclose(rows, src.to(torch.float32))
        assert same, f"{key} must be in rows [{start}, {start + src.shape[0]}) of {name}"


def load_error(model, folder) -> str | None:
    """The message of the ModelLoadError that load_weights raised, or None."""
    try:
        weight.load_weights(model, folder, CPU)
    except ModelLoadError as e:
        return str(e)
    return None


def test_example_one_layer_gqa():
    """One Qwen3 layer with GQA, one file: every tensor lands in its rows (k after q, v after k, up after gate)."""
    g = rng()
    cfg = random_config(g, architecture="Qwen3ForCausalLM", num_layers=1, num_heads=4, num_kv_heads=2,
                        tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
    tensors = hf_tensors(g, cfg)
    with tempfile.TemporaryDirectory() as d:
        write_checkpoint(Path(d), tensors)
        model = make_model(cfg)
        weight.load_weights(model, d, CPU)
    check_every_row(model, cfg, tensors)


def test_example_a_missing_weight():
    """A checkpoint without one layer's k_proj: ModelLoadError naming the checkpoint name."""
    g = rng()
    cfg = random_config(g, num_layers=2, attention_bias=False)
    tensors = hf_tensors(g, cfg)
    del tensors["model.layers.1.self_attn.k_proj.weight"]
    with tempfile.TemporaryDirectory() as d:
        write_checkpoint(Path(d), tensors)
        message = load_error(make_model(cfg), d)
    assert message is not None, "a weight no file has must raise ModelLoadError"
    assert "model.layers.1.self_attn.k_proj.weight" in message, \
        f"the error must name the missing checkpoint name; it was: {message}"


def test_biases_are_loaded():
    """Rule 1: every name of state_dict() that is not merged is loaded whole (the biases of o_proj and down_proj),
    and the merged biases go into their rows, like the weights."""
    g = rng()
    for arch in ("Qwen3ForCausalLM", "LlamaForCausalLM"):
        cfg = random_config(g, architecture=arch, num_layers=2, attention_bias=True, mlp_bias=True)
        tensors = hf_tensors(g, cfg)
        with tempfile.TemporaryDirectory() as d:
            write_checkpoint(Path(d), tensors, shards=2)
            model = make_model(cfg)
            message = load_error(model, d)
        assert message is None, f"a complete checkpoint with biases must load; it raised: {message}"
        check_every_row(model, cfg, tensors)


def test_float64_model_gets_the_float64_values():
    """Rule 3: a tensor is converted to the weight's dtype: a float64 model loaded from a float64 checkpoint holds
    exactly the checkpoint's values (no trip through float32)."""
    g = rng()
    cfg = random_config(g, num_layers=1)
    tensors = {k: v.double() / 3 for k, v in hf_tensors(g, cfg).items()}  # thirds: not float32 values
    with tempfile.TemporaryDirectory() as d:
        write_checkpoint(Path(d), tensors, dtype="F64")
        cls = Qwen3ForCausalLM if cfg.architecture == "Qwen3ForCausalLM" else LlamaForCausalLM
        model = cls(cfg, torch.float64, CPU)
        weight.load_weights(model, d, CPU)
    state = model.state_dict()
    for key, src in tensors.items():
        spot = where(cfg, key)
        if spot is None:
            continue
        name, start = spot
        assert str(state[name].dtype) == "torch.float64", f"{name} must keep the model's dtype, float64"
        rows = state[name][start : start + src.shape[0]]
        assert torch.equal(rows, src), \
            f"{key}: a float64 model must get the checkpoint's float64 values exactly (convert to the weight's dtype)"


def dump(cfg: ModelConfig, folder: str) -> dict:
    model = make_model(cfg)
    weight.load_weights(model, folder, CPU)
    return {k: v.tolist() for k, v in model.state_dict().items()}


def test_random_checkpoints():
    """Random shapes, biases, tied or not, extra keys, 1 to 3 shards, float32 or float64: every row in place,
    converted to float32, and the same weights as the engine's loader."""
    g = rng()
    for _ in range(3):
        cfg = random_config(g)
        tensors = hf_tensors(g, cfg)
        with tempfile.TemporaryDirectory() as d:
            write_checkpoint(Path(d), tensors, shards=g.randint(1, 3), dtype=g.choice(["F32", "F64"]))
            model = make_model(cfg)
            message = load_error(model, d)
            assert message is None, f"a complete checkpoint must load; it raised: {message}"
            dtypes = sorted({str(v.dtype) for v in model.state_dict().values()})
            assert dtypes == ["torch.float32"], "the weights keep the model's dtype: the values are converted"
            check_every_row(model, cfg, tensors)
            got = {k: v.tolist() for k, v in model.state_dict().items()}
            assert got == expected(dump, cfg, d), "the weights differ from those the engine's loader gives"


def test_sharded_checkpoint_reads_every_file():
    """Three shards and an index: the weights of every shard are loaded."""
    g = rng()
    cfg = random_config(g, num_layers=3)
    tensors = hf_tensors(g, cfg)
    with tempfile.TemporaryDirectory() as d:
        write_checkpoint(Path(d), tensors, shards=3)
        model = make_model(cfg)
        message = load_error(model, d)
        assert message is None, f"a sharded checkpoint must load from all its files; it raised: {message}"
    check_every_row(model, cfg, tensors)


def test_a_file_of_the_index_is_missing():
    """The index names a file that is not there: ModelLoadError naming that file."""
    g = rng()
    cfg = random_config(g, num_layers=2)
    with tempfile.TemporaryDirectory() as d:
        files = write_checkpoint(Path(d), hf_tensors(g, cfg), shards=3)
        gone = files[g.randrange(3)]
        (Path(d) / gone).unlink()
        try:
            message, other = load_error(make_model(cfg), d), None
        except Exception as e:  # noqa: BLE001 - any other error is the wrong kind
            message, other = None, f"{type(e).__name__}: {e}"
    assert other is None, f"a file missing from the folder must raise ModelLoadError naming it; it raised {other}"
    assert message is not None, "a file of the index is missing: load_weights must raise ModelLoadError"
    assert gone in message, f"the error must name the missing file {gone}; it was: {message}"


def test_shape_mismatch_names_file_key_and_shapes():
    """One tensor of a wrong shape that would broadcast ([1, hidden] for [rows, hidden]): ModelLoadError naming
    the file, the key and both shapes."""
    g = rng()
    cfg = random_config(g, num_heads=4, num_kv_heads=2, head_dim=6, hidden_size=20)
    tensors = hf_tensors(g, cfg)
    layer = g.randrange(cfg.num_layers)
    key = f"model.layers.{layer}.self_attn.v_proj.weight"
    tensors[key] = pattern(g, 1, 20)
    with tempfile.TemporaryDirectory() as d:
        files = write_checkpoint(Path(d), tensors, shards=2)
        message = load_error(make_model(cfg), d)
    assert message is not None, f"{key} has shape (1, 20) where the model expects (12, 20): ModelLoadError"
    file = files[list(tensors).index(key) % 2]  # write_checkpoint deals the tensors out in turn
    assert file in message, f"the error must name the file the tensor is in, {file}; it was: {message}"
    assert key in message, f"the error must name the key {key}; it was: {message}"
    shapes = "(1, 20)" in message and "(12, 20)" in message
    assert shapes, f"the error must show both shapes, (1, 20) and (12, 20); it was: {message}"


def test_transposed_tensor_is_refused():
    """A tensor of the right size but the wrong shape (o_proj transposed, (24, 20) for (20, 24)): ModelLoadError
    naming the key and both shapes; nothing reshaped into the weight."""
    g = rng()
    cfg = random_config(g, num_heads=4, num_kv_heads=2, head_dim=6, hidden_size=20)
    tensors = hf_tensors(g, cfg)
    key = f"model.layers.{g.randrange(cfg.num_layers)}.self_attn.o_proj.weight"
    tensors[key] = tensors[key].T.contiguous()
    with tempfile.TemporaryDirectory() as d:
        write_checkpoint(Path(d), tensors)
        try:
            message, other = load_error(make_model(cfg), d), None
        except Exception as e:  # noqa: BLE001 - any other error is the wrong kind
            message, other = None, f"{type(e).__name__}: {e}"
    assert other is None, f"{key} has shape (24, 20) for (20, 24): ModelLoadError, not {other}"
    assert message is not None, f"{key} has shape (24, 20) where the model expects (20, 24): ModelLoadError"
    assert key in message and "(24, 20)" in message and "(20, 24)" in message, \
        f"the error must name the key {key} and both shapes, (24, 20) and (20, 24); it was: {message}"


def test_right_rows_other_columns_is_refused():
    """Comparing the rows alone is not enough: a tensor with the right number of rows and one column ([rows, 1]
    for [rows, hidden], which copy_ would broadcast), a merged part (up_proj) and a whole weight (down_proj):
    ModelLoadError naming the key and both shapes."""
    g = rng()
    cfg = random_config(g, num_heads=4, num_kv_heads=2, head_dim=6, hidden_size=20, intermediate_size=14)
    layer = g.randrange(cfg.num_layers)
    for key, rows, want in ((f"model.layers.{layer}.mlp.up_proj.weight", 14, "(14, 20)"),
                            (f"model.layers.{layer}.mlp.down_proj.weight", 20, "(20, 14)")):
        tensors = hf_tensors(g, cfg)
        tensors[key] = pattern(g, rows, 1)
        bad = f"({rows}, 1)"
        with tempfile.TemporaryDirectory() as d:
            write_checkpoint(Path(d), tensors)
            try:
                message, other = load_error(make_model(cfg), d), None
            except Exception as e:  # noqa: BLE001 - any other error is the wrong kind
                message, other = None, f"{type(e).__name__}: {e}"
        assert other is None, f"{key} has shape {bad} for {want}: ModelLoadError, not {other}"
        assert message is not None, (f"{key} has shape {bad} where the model expects {want} (same rows, one column: "
                                     "copy_ would broadcast it): compare the whole shape, ModelLoadError")
        assert key in message and bad in message and want in message, \
            f"the error must name the key {key} and both shapes, {bad} and {want}; it was: {message}"


def test_many_missing_weights():
    """A checkpoint with only the embedding: the error names the first five missing checkpoint names."""
    g = rng()
    cfg = random_config(g, num_layers=2, tie_word_embeddings=True)
    tensors = hf_tensors(g, cfg)
    kept = {"model.embed_tokens.weight": tensors["model.embed_tokens.weight"]}
    everything = sorted(k for k in tensors if where(cfg, k) is not None and k != "model.embed_tokens.weight")
    with tempfile.TemporaryDirectory() as d:
        write_checkpoint(Path(d), kept)
        message = load_error(make_model(cfg), d)
    assert message is not None, "weights no file had must raise ModelLoadError"
    named = [k for k in everything[:5] if k in message]
    assert named == everything[:5], f"the error must name the first five missing checkpoint names {everything[:5]}"


def reshard_tiny(folder: Path, shards: int, dtype: str) -> None:
    """The tiny Qwen3's own weights, written again in `shards` files (with an index) plus an extra key."""
    from safetensors import safe_open

    tensors = {}
    with safe_open(str(TINY / "model.safetensors"), framework="pt", device="cpu") as f:
        for key in f.keys():
            tensors[key] = f.get_tensor(key)
    tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(8)
    write_checkpoint(folder, tensors, shards=shards, dtype=dtype)
    shutil.copy(TINY / "config.json", folder / "config.json")


def test_engine_from_a_resharded_checkpoint():
    """The tiny model's checkpoint resharded (float64, an extra key): an engine loaded from it gives exactly the
    tokens of the original."""
    from minisgl.env import ENV
    from minisgl.llm import LLM

    g = rng()
    prompts = [PROMPT_IDS[i] for i in g.sample(range(len(PROMPT_IDS)), 3)]
    with tempfile.TemporaryDirectory() as d:
        reshard_tiny(Path(d), shards=g.randint(2, 3), dtype="F64")
        ENV.DISABLE_OVERLAP_SCHEDULING.value = True
        device = engine_device()
        llm = LLM(d, dtype=torch.float32, max_running_req=8, num_page_override=256, max_seq_len_override=64,
                  attention_backend="torch_static" if device == "cuda" else "torch", device=device,
                  cuda_graph_max_bs=0)
        try:
            from judge.testing import generate

            got = generate(llm, prompts, 5)
        finally:
            llm.shutdown()
    assert got == eager_tokens(prompts, 5, tied=False), "the tokens differ from those of the original checkpoint"

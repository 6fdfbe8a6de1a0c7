"""Tests for weight-parts: the map on random shapes, the parts tiling each merged tensor, the tiny model loaded."""

import dataclasses

import torch

from judge.testing import PROMPT_IDS, engine, expected, generate, rng
from minisgl.models import ModelConfig
from minisgl.models.llama import LlamaForCausalLM
from minisgl.models.qwen3 import Qwen3ForCausalLM
from minisgl.testing import tiny_model

CPU = torch.device("cpu")
BASE = ModelConfig.from_path(tiny_model("qwen3"))


def make(arch=Qwen3ForCausalLM, **changes):
    return arch(dataclasses.replace(BASE, **changes), torch.float32, CPU)


def random_model(g):
    """A model of random shape: 1 to 3 layers, GQA or not, with or without biases."""
    kv = g.choice([1, 2, 3])
    group = g.choice([1, 2, 3])
    head_dim = g.choice([6, 10, 12])
    arch = g.choice([Qwen3ForCausalLM, LlamaForCausalLM])
    return make(arch, num_layers=g.randint(1, 3), hidden_size=g.choice([20, 28]),
                num_heads=kv * group, num_kv_heads=kv, head_dim=head_dim, intermediate_size=g.choice([22, 34, 46]),
                vocab_size=70, attention_bias=g.random() < 0.5, mlp_bias=g.random() < 0.5)


def parts(model) -> dict:
    return dict(model.weight_parts())


def test_example_one_layer_gqa():
    """One layer, 4 query heads and 2 KV heads of 16: q is 64 rows, k and v 32 each; gate and up 128 each."""
    m = make(num_layers=1)
    got = parts(m)
    attn, mlp = "model.layers.0.self_attn", "model.layers.0.mlp"
    want = {
        f"{attn}.q_proj.weight": (f"{attn}.qkv_proj.weight", 0, 64),
        f"{attn}.k_proj.weight": (f"{attn}.qkv_proj.weight", 64, 32),
        f"{attn}.v_proj.weight": (f"{attn}.qkv_proj.weight", 96, 32),
        f"{mlp}.gate_proj.weight": (f"{mlp}.gate_up_proj.weight", 0, 128),
        f"{mlp}.up_proj.weight": (f"{mlp}.gate_up_proj.weight", 128, 128),
    }
    assert got == want, "q, k, v in that order in qkv_proj; gate then up in gate_up_proj"


def test_example_every_layer():
    """Two layers: 5 parts each, named after their layer."""
    m = make(num_layers=2)
    got = sorted(parts(m))
    want = sorted(f"model.layers.{i}.{n}.weight" for i in range(2) for n in
                  ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj"))
    assert got == want, "every layer's q/k/v and gate/up weights are keys, and nothing else"


def test_parts_are_tuples_of_a_name_and_two_ints():
    """Each value is a tuple (our_name, first_row, rows): a str and two Python ints, rows a count of rows."""
    g = rng()
    m = random_model(g)
    for src, part in parts(m).items():
        assert type(part) is tuple and len(part) == 3, f"{src}: the value must be a tuple (our_name, first_row, rows)"
        assert isinstance(part[0], str) and all(type(x) is int for x in part[1:]), \
            f"{src}: (our_name, first_row, rows) is a str and two Python ints, got {part!r}"
    c = m.config
    q, kv = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    v = parts(m)["model.layers.0.self_attn.v_proj.weight"]
    assert v[1:] == (q + kv, kv), f"v starts at row q + kv = {q + kv} and has kv = {kv} rows (a count, not an end)"


def test_random_shapes_like_the_engine():
    """Random shapes, GQA or not, with or without biases: the same map as the engine's."""
    g = rng()
    for _ in range(6):
        m = random_model(g)
        c = m.config
        got = parts(m)
        assert got == expected(parts, m), (f"the map differs from the engine's for num_layers={c.num_layers}, "
                                           f"heads={c.num_heads}/{c.num_kv_heads}, head_dim={c.head_dim}, "
                                           f"attention_bias={c.attention_bias}, mlp_bias={c.mlp_bias}")


def test_parts_tile_the_merged_tensors():
    """For every merged tensor, its parts cover its rows exactly once, in order, and match its shape."""
    g = rng()
    for _ in range(4):
        m = random_model(g)
        state = m.state_dict()
        got = parts(m)
        merged: dict[str, list] = {}
        for src, (dst, start, rows) in got.items():
            assert dst in state, f"{src} goes to {dst}, which the model does not have"
            merged.setdefault(dst, []).append((start, rows, src))
        for dst, pieces in merged.items():
            pieces.sort()
            edges = [0] + [s + r for s, r, _ in pieces]
            starts = [s for s, _, _ in pieces] + [state[dst].shape[0]]
            assert edges == starts, f"the parts of {dst} must tile its {state[dst].shape[0]} rows: {pieces}"
        for name in state:
            if "qkv_proj" in name or "gate_up_proj" in name:
                assert name in merged, f"{name} is merged: some checkpoint tensors must go into it"


def test_biases_follow_their_flags():
    """attention_bias gives q/k/v biases their parts; mlp_bias gives gate/up biases theirs; independently."""
    g = rng()
    for attention_bias, mlp_bias in [(True, False), (False, True)]:
        m = make(num_layers=g.randint(1, 3), attention_bias=attention_bias, mlp_bias=mlp_bias)
        keys = parts(m)
        has_attn_bias = any(k.endswith("q_proj.bias") for k in keys)
        has_mlp_bias = any(k.endswith("gate_proj.bias") for k in keys)
        assert has_attn_bias == attention_bias, f"q/k/v biases are parts exactly when attention_bias ({attention_bias})"
        assert has_mlp_bias == mlp_bias, f"gate/up biases are parts exactly when mlp_bias ({mlp_bias})"
        bias_of_first = keys.get("model.layers.0.self_attn.v_proj.bias") if attention_bias else \
            keys.get("model.layers.0.mlp.up_proj.bias")
        want = ("model.layers.0.self_attn.qkv_proj.bias", 96, 32) if attention_bias else \
            ("model.layers.0.mlp.gate_up_proj.bias", 128, 128)
        assert bias_of_first == want, "a bias goes to the same rows of the merged bias as its weight"


def run_tiny(prompts):
    with engine() as llm:
        return generate(llm, prompts, 5)


def test_engine_loads_the_tiny_gqa_model():
    """The tiny Qwen3 (GQA: 4 query heads, 2 KV heads) loaded through your map: the engine's tokens."""
    g = rng()
    prompts = [PROMPT_IDS[i] for i in g.sample(range(len(PROMPT_IDS)), 3)]
    got = run_tiny(prompts)
    assert got == expected(run_tiny, prompts), "the tokens differ: some rows of qkv_proj or gate_up_proj are wrong"

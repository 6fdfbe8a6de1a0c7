"""Tests for rmsnorm-and-rope: the norm (float32 and float16), the table lookup, the rotation, the tiny model."""

import math
import random

import torch

from judge.testing import PROMPT_IDS, engine, expected, generate, hidden_prompts, rng
from minisgl.layers import RMSNorm, RotaryEmbedding

CPU = torch.device("cpu")


def tensor(g, *shape, scale=1.0, dtype=torch.float32) -> torch.Tensor:
    n = 1
    for s in shape:
        n *= s
    return (torch.tensor([g.uniform(-2.0, 2.0) * scale for _ in range(n)], dtype=torch.float32)
            .reshape(*shape).to(dtype))


def norm_of(g, dim: int, eps: float, dtype=torch.float32) -> RMSNorm:
    n = RMSNorm(dim, eps, dtype, CPU)
    n.weight.copy_(tensor(g, dim) + 2.5)
    return n


def direct_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """The statement's formula, one vector at a time (float64 sums, float32 result)."""
    flat = x.float().reshape(-1, x.shape[-1])
    rows = []
    for v in flat.tolist():
        r = math.sqrt(sum(a * a for a in v) / len(v) + eps)
        rows.append([a / r for a in v])
    h = torch.tensor(rows, dtype=torch.float32).reshape(x.shape)
    return weight.float() * h


def check_norm(x, norm, what):
    got = norm.forward(x)
    assert list(got.shape) == list(x.shape), f"{what}: the output has x's shape"
    close = torch.allclose(got.float(), direct_norm(x, norm.weight, norm._eps), rtol=1e-4, atol=1e-5)
    assert close, f"{what}: the output differs from weight * x / sqrt(mean(x^2) + eps) (last dimension)"


def rope_of(d: int, max_pos: int = 64) -> RotaryEmbedding:
    return RotaryEmbedding(d, max_pos, 10000.0, None, torch.float32, CPU)


def direct_rotate(x: torch.Tensor, positions: list[int], rope: RotaryEmbedding) -> torch.Tensor:
    """Pairs (i, i + D/2) of each token's vectors rotated by the table's angle at its position."""
    t, h, d = x.shape
    half = d // 2
    out = torch.zeros(t, h, d)
    for n, p in enumerate(positions):
        c, s = rope._cos[p], rope._sin[p]
        for i in range(half):
            a, b = x[n, :, i], x[n, :, i + half]
            out[n, :, i] = a * c[i] - b * s[i]
            out[n, :, i + half] = b * c[i + half] + a * s[i + half]
    return out


def check_rope(g, t, hq, hkv, d, what):
    rope = rope_of(d)
    positions = [g.randrange(0, 64) for _ in range(t)]
    cos, sin = rope.cos_sin(torch.tensor(positions, dtype=torch.int32))
    assert list(cos.shape) == [t, 1, d] and list(sin.shape) == [t, 1, d], \
        f"{what}: cos and sin must be [T, 1, D] = [{t}, 1, {d}] (to broadcast over the heads)"
    rows = torch.equal(cos[:, 0], rope._cos[positions]) and torch.equal(sin[:, 0], rope._sin[positions])
    assert rows, f"{what}: cos_sin must return the table rows of the given positions, in their order"
    q, k = tensor(g, t, hq, d), tensor(g, t, hkv, d)
    rq, rk = RotaryEmbedding.forward((cos, sin), q, k)
    assert list(rq.shape) == [t, hq, d] and list(rk.shape) == [t, hkv, d], f"{what}: q and k keep their shapes"
    assert torch.allclose(rq, direct_rotate(q, positions, rope), atol=1e-5), \
        f"{what}: q is not rotated as x * cos + rotate_half(x) * sin with rotate_half(x) = cat(-x2, x1)"
    assert torch.allclose(rk, direct_rotate(k, positions, rope), atol=1e-5), f"{what}: k must be rotated like q"


def test_example_norm():
    """RMSNorm of a [3, 8] input: weight * x / sqrt(mean(x^2) + eps); then of tiny values (mean square close to
    eps = 1e-5), where eps under the root matters."""
    g = random.Random(1)
    check_norm(tensor(g, 3, 8), norm_of(g, 8, 1e-6), "RMSNorm [3, 8]")
    check_norm(tensor(g, 2, 8, scale=3e-3), norm_of(g, 8, 1e-5), "RMSNorm [2, 8] of tiny values, eps=1e-5")


def test_example_rope():
    """RoPE on 4 tokens at positions in any order, 4 query heads and 2 KV heads of 8."""
    check_rope(random.Random(2), 4, 4, 2, 8, "RoPE [4 tokens, 4/2 heads, D=8]")


def test_norm_random_shapes():
    """Random shapes, ranks 2 and 3 (a per-head norm normalises each head's vector)."""
    g = rng()
    for shape in ([g.randint(2, 7), 24], [g.randint(2, 5), 3, 10]):
        check_norm(tensor(g, *shape), norm_of(g, shape[-1], 1e-6), f"RMSNorm {shape}")


def test_norm_eps_inside_the_root():
    """Tiny inputs (mean square close to eps): eps must be added under the square root."""
    g = rng()
    eps = 1e-5
    check_norm(tensor(g, 4, 12, scale=3e-3), norm_of(g, 12, eps), "tiny inputs, eps=1e-5")


def test_norm_float16_casts_before_scaling():
    """float16: normalised in float32, cast to float16, then scaled by the float16 weight (Hugging Face's rounding)."""
    g = rng()
    x = tensor(g, 6, 64, dtype=torch.float16)
    norm = norm_of(g, 64, 1e-6, dtype=torch.float16)
    got = norm.forward(x)
    assert str(got.dtype) == "torch.float16", "a float16 input gives a float16 output"
    rows = []
    for v in x.float().tolist():
        r = math.sqrt(sum(a * a for a in v) / len(v) + 1e-6)
        rows.append([a / r for a in v])
    want = norm.weight * torch.tensor(rows, dtype=torch.float16)  # cast to float16 first, then scale in float16
    mismatches = int((got != want).sum())
    assert mismatches <= 4, (f"{mismatches} of 384 values are rounded differently from weight * normalised.to(float16):"
                             f" cast back to x's dtype before scaling")


def normalised(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) on the last dimension, in float32 (float64 sums), shaped [N, dim]."""
    rows = []
    for v in x.float().reshape(-1, x.shape[-1]).tolist():
        r = math.sqrt(sum(a * a for a in v) / len(v) + eps)
        rows.append([a / r for a in v])
    return torch.tensor(rows, dtype=torch.float32)


def test_norm_casts_to_x_dtype_not_the_weights():
    """The weight and x in different dtypes: the normalised x is cast to x's dtype (not the weight's), then
    scaled; the product's dtype is what PyTorch's promotion gives (float32 here, both ways round)."""
    g = rng()
    x = tensor(g, 5, 32)
    norm = norm_of(g, 32, 1e-6, dtype=torch.float16)
    got = norm.forward(x)
    assert str(got.dtype) == "torch.float32", \
        "float32 x, float16 weight: h stays float32 (x's dtype), weight * h is float32; cast to x's dtype, not the weight's"
    close = torch.allclose(got, norm.weight.float() * normalised(x, 1e-6), rtol=1e-4, atol=1e-5)
    assert close, "float32 x, float16 weight: the output is weight * normalised x, normalised x kept in float32"
    x16 = tensor(g, 6, 64, dtype=torch.float16)
    norm32 = norm_of(g, 64, 1e-6)
    got = norm32.forward(x16)
    assert str(got.dtype) == "torch.float32", "float16 x, float32 weight: float32 weight * float16 h is float32"
    want = norm32.weight * normalised(x16, 1e-6).to(torch.float16)  # rounded to x's dtype, then scaled
    mismatches = int((got != want).sum())
    assert mismatches <= 4, (f"float16 x, float32 weight: {mismatches} of 384 values differ from weight * "
                             f"normalised.to(float16): the normalised x is cast to x's dtype before scaling")


def test_norm_float16_large_values_in_float32():
    """"Normalise ... in float32": float16 inputs of a few hundred (their squares overflow float16's 65504) are
    normalised in float32, so the output is finite and right."""
    g = rng()
    x = tensor(g, 4, 16, scale=200.0, dtype=torch.float16)
    x[0, 0] = 300.0  # 300 ** 2 = 90000: beyond float16
    norm = norm_of(g, 16, 1e-6, dtype=torch.float16)
    got = norm.forward(x)
    assert all(math.isfinite(v) for v in got.float().reshape(-1).tolist()), \
        "float16 x of a few hundred: x ** 2 overflows float16; compute the mean square in float32"
    want = norm.weight.float() * normalised(x, 1e-6)
    assert torch.allclose(got.float(), want, rtol=1e-2, atol=1e-2), \
        "float16 x of a few hundred: the output differs from weight * x / sqrt(mean(x^2) + eps) computed in float32"


def test_cos_sin_rows_in_the_order_given():
    """cos_sin: positions in any order, repeats allowed: row n of the result is the table row of positions[n], at
    every call (a second batch of as many tokens gets its own rows)."""
    rope = rope_of(8)
    positions = [9, 3, 3, 0, 12, 1]
    cos, sin = rope.cos_sin(torch.tensor(positions, dtype=torch.int32))
    assert list(cos.shape) == [6, 1, 8] and list(sin.shape) == [6, 1, 8], "cos and sin must be [T, 1, D]"
    assert torch.equal(cos[:, 0], rope._cos[positions]) and torch.equal(sin[:, 0], rope._sin[positions]), \
        "cos_sin must return the rows of the positions in the order given (descending and repeated ones too)"
    later = [4, 4, 11, 2, 0, 7]  # the next forward's batch, as many tokens: its own rows, nothing kept from before
    cos, sin = rope.cos_sin(torch.tensor(later, dtype=torch.int32))
    assert torch.equal(cos[:, 0], rope._cos[later]) and torch.equal(sin[:, 0], rope._sin[later]), \
        "each call returns the rows of the positions it is given: a second call (another batch of as many tokens) " \
        "got other rows"


def test_rope_keeps_the_model_dtype():
    """The tables are already in the model's dtype (that of q and k): float16 tables, q and k give float16 cos,
    sin, q and k (no cast to float32), rotated right."""
    g = rng()
    rope = RotaryEmbedding(8, 32, 10000.0, None, torch.float16, CPU)
    positions = [g.randrange(0, 32) for _ in range(5)]
    cos, sin = rope.cos_sin(torch.tensor(positions, dtype=torch.int32))
    assert str(cos.dtype) == "torch.float16" and str(sin.dtype) == "torch.float16", \
        "cos_sin returns the table rows as they are: in the model's dtype (float16 here), no cast"
    q, k = tensor(g, 5, 2, 8, dtype=torch.float16), tensor(g, 5, 1, 8, dtype=torch.float16)
    rq, rk = RotaryEmbedding.forward((cos, sin), q, k)
    assert str(rq.dtype) == "torch.float16" and str(rk.dtype) == "torch.float16", \
        "float16 q and k come back float16 (the tables are in the model's dtype: no cast to float32)"
    assert torch.allclose(rq.float(), direct_rotate(q.float(), positions, rope).float(), atol=1e-2), \
        "float16: q is not rotated as x * cos + rotate_half(x) * sin"


def test_rope_random_shapes():
    """Random token counts, head counts and head sizes; repeated positions included."""
    g = rng()
    for hq, hkv in ((6, 2), (3, 3), (4, 1)):
        check_rope(g, g.randint(3, 9), hq, hkv, g.choice([6, 10, 16]), f"RoPE heads {hq}/{hkv}")


def test_position_zero_is_the_identity():
    """At position 0 every angle is 0: q and k come back unchanged."""
    g = rng()
    rope = rope_of(10)
    q, k = tensor(g, 3, 2, 10), tensor(g, 3, 1, 10)
    rq, rk = RotaryEmbedding.forward(rope.cos_sin(torch.zeros(3, dtype=torch.int32)), q, k)
    same = torch.allclose(rq, q, atol=1e-6) and torch.allclose(rk, k, atol=1e-6)
    assert same, "position 0 rotates by 0: the output must equal the input"


def run(prompts):
    with engine() as llm:
        return generate(llm, prompts, 5)


def test_engine_tokens():
    """The tiny Qwen3 (RMSNorm everywhere, per-head q/k norms, RoPE) with your ops: the engine's tokens."""
    prompts = hidden_prompts(3, min_len=4, max_len=12)
    assert run(prompts) == expected(run, prompts), "the tokens differ from the engine's"


def test_engine_fixed_prompts():
    """The fixed prompts: the engine's tokens."""
    assert run(PROMPT_IDS[:4]) == expected(run, PROMPT_IDS[:4]), "the tokens differ from the engine's"

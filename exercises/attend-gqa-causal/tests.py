"""Tests for attend-gqa-causal: random shapes against a direct computation, then the tiny GQA model."""

import random

import torch

from judge.testing import PROMPT_IDS, engine, expected, generate, hidden_prompts, mode, rng
from minisgl.attention import utils


def tensor(g, *shape) -> torch.Tensor:
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([g.uniform(-1.5, 1.5) for _ in range(n)], dtype=torch.float32).reshape(*shape)


def direct(q, k, v, scale, mask: str = "bottom-right", heads: str = "grouped") -> torch.Tensor:
    """The statement's formula, one query and one head at a time. mask and heads name the rule (the statement's,
    or a classic mistake, to say which one a wrong output made)."""
    n, hq, d = q.shape
    L, hkv = k.shape[0], k.shape[1]
    group = hq // hkv
    out = torch.zeros(n, hq, d)
    for i in range(n):
        visible = {"bottom-right": L - n + i + 1, "top-left": i + 1, "none": L, "no-diagonal": L - n + i}[mask]
        for h in range(hq):
            kv = h // group if heads == "grouped" else h % hkv
            scores = torch.tensor([float((q[i, h] * k[j, kv]).sum()) * scale for j in range(visible)] or [0.0])
            p = torch.softmax(scores, dim=-1)
            for j in range(visible):
                out[i, h] += p[j] * v[j, kv]
    return out


MISTAKES = [
    (dict(mask="top-left"), "the causal mask is aligned top-left (query i sees keys 0..i), not bottom-right"),
    (dict(mask="none"), "no causal mask: queries see later keys"),
    (dict(mask="no-diagonal"), "a query must see its own position (keys 0 .. L - n + i, inclusive)"),
    (dict(heads="interleaved"), "query head h must use KV head h // (Hq // Hkv), not h % Hkv"),
    (dict(scale=1.0), "the scores must be multiplied by scale"),
]


def case(g, n, L, hq, hkv, d):
    return tensor(g, n, hq, d), tensor(g, L, hkv, d), tensor(g, L, hkv, d), d**-0.5


def check(q, k, v, scale, what: str) -> None:
    got = utils.attend(q, k, v, scale)
    assert list(got.shape) == list(q.shape), f"{what}: the output has the shape of q, {list(q.shape)}"
    want = direct(q, k, v, scale)
    ok = bool(torch.allclose(got, want, atol=1e-5))
    where, hint = "", ""
    if not ok:
        where, hint = diagnose(got, want, q, k, v, scale)
    assert ok, f"{what}: wrong output at {where}: {hint}"


def diagnose(got, want, q, k, v, scale) -> tuple[str, str]:
    """Where a wrong output first differs, and which classic mistake (if any) explains all of it."""
    nan = (got != got).sum(dim=-1) > 0  # [n, Hq]
    bad = ((got - want).abs().max(dim=-1).values > 1e-5) | nan
    i, h = [int(x) for x in bad.nonzero()[0]]
    hint = "the output differs from softmax(scale * q k^T, causal) v"
    if bool(nan[i, h]):
        hint = "the output is NaN: this query saw no key at all (a query sees its own position)"
    for change, why in MISTAKES:
        kw = dict(mask="bottom-right", heads="grouped", scale=scale)
        kw.update(change)
        if torch.allclose(got, direct(q, k, v, kw.pop("scale"), **kw), atol=1e-5):
            hint = why
            break
    return f"query {i}, head {h}", hint


def test_example_fresh_prefill_gqa():
    """A fresh prefill (n == L == 5), 4 query heads over 2 KV heads of 6 dimensions."""
    g = random.Random(1)
    check(*case(g, 5, 5, 4, 2, 6), "a prefill of 5 tokens, GQA 4/2")


def test_example_decode():
    """One query (a decode step) over 7 keys sees all of them; 3 query heads share 1 KV head."""
    g = random.Random(2)
    check(*case(g, 1, 7, 3, 1, 8), "a decode step over 7 keys, MQA 3/1")


def test_example_prefill_after_a_prefix():
    """3 new tokens after 4 cached (n = 3 < L = 7): query i is at position 4 + i and sees keys 0 .. 4 + i."""
    g = random.Random(3)
    check(*case(g, 3, 7, 4, 2, 6), "3 new tokens after 4 cached, GQA 4/2")


def test_prefill_after_a_prefix():
    """n < L: the queries are the last n positions; query i sees keys 0 .. L - n + i."""
    g = rng()
    for _ in range(3):
        n = g.randint(2, 5)
        L = n + g.randint(2, 7)
        hkv = g.choice([1, 2])
        check(*case(g, n, L, hkv * g.choice([2, 3]), hkv, g.choice([5, 7])), f"{n} new tokens after {L - n} cached")


def test_heads_are_grouped_consecutively():
    """Hq = 6 over Hkv = 2: heads 0-2 use KV head 0 and heads 3-5 use KV head 1 (not 0, 1, 0, 1, ...)."""
    g = rng()
    n, L = g.randint(2, 4), g.randint(5, 9)
    q, k, v, scale = case(g, n, L, 6, 2, 5)
    c = round(g.uniform(0.3, 0.9), 2)
    v[:, 1] = c  # every value of KV head 1 is c: a query head reading it outputs exactly c
    check(q, k, v, scale, "GQA 6/2")
    got = utils.attend(q, k, v, scale)
    reads_head_1 = [bool(torch.allclose(got[:, h], torch.full((n, 5), c), atol=1e-5)) for h in range(6)]
    assert reads_head_1 == [False, False, False, True, True, True], \
        "query heads 0-2 must use KV head 0 and heads 3-5 KV head 1 (h // (Hq // Hkv))"


def test_multi_head_and_random_shapes():
    """Random shapes, Hkv == Hq (plain multi-head) included."""
    g = rng()
    for _ in range(4):
        hkv = g.choice([1, 2, 3])
        hq = hkv * g.choice([1, 2])
        n = g.randint(1, 6)
        check(*case(g, n, n + g.randint(0, 6), hq, hkv, g.choice([4, 6, 9])), f"shape n={n}, heads {hq}/{hkv}")


def test_scale_is_applied():
    """The scores are multiplied by scale (a large scale makes the attention sharp), in a prefill and in a decode
    step (n == 1) alike: the scale given, not 1 / sqrt(D)."""
    g = rng()
    q, k, v, _ = case(g, 3, 6, 2, 2, 4)
    check(q, k, v, round(g.uniform(1.5, 3.0), 2), "scale > 1")
    for scale in (2.5, round(g.uniform(0.05, 0.2), 3)):
        q, k, v, _ = case(g, 1, g.randint(4, 9), 4, 2, 6)
        check(q, k, v, scale, f"a decode step (n == 1) with scale = {scale} (not 1 / sqrt(D))")


def test_hidden_keys_get_no_weight():
    """Scores far below zero (from about -250 down to -630): a later key still gets no weight at all, whatever
    the visible keys' scores (a finite fill such as -100 would outweigh them). Every q and k is a whole multiple of
    the all-ones vector, so each score is exact and the softmax over the visible keys is exactly known."""
    g = rng()
    for n, L, hq, hkv in ((2, 5, 2, 1), (g.randint(2, 4), g.randint(5, 9), 4, 2)):
        d = 6
        a = [g.randint(10, 16) for _ in range(n)]  # query i is -a[i] * ones
        b = [g.randint(10, 16) for _ in range(L)]  # key j is b[j] * ones (every KV head)
        q = torch.tensor([[[-float(a[i])] * d] * hq for i in range(n)])
        k = torch.tensor([[[float(b[j])] * d] * hkv for j in range(L)])
        v = tensor(g, L, hkv, d)
        got = utils.attend(q, k, v, d**-0.5)
        want = direct(q, k, v, d**-0.5)
        close = bool(torch.allclose(got, want, atol=1e-5))
        assert close, (f"{n} new tokens after {L - n} cached, every score below -200: a later key got weight; "
                       "hide it with -inf, not a finite fill")


def test_output_in_the_dtype_of_q():
    """o is in the dtype of q, k and v: float64 inputs give a float64 output (not float32), right within 1e-5."""
    g = rng()
    q, k, v, scale = case(g, 3, 6, 4, 2, 6)
    q, k, v = q.double(), k.double(), v.double()
    got = utils.attend(q, k, v, scale)
    assert str(got.dtype) == "torch.float64", f"float64 q, k and v: the output must be float64, not {got.dtype}"
    assert list(got.shape) == [3, 4, 6], "the output has the shape of q, [n, Hq, D]"
    want = direct(q.float(), k.float(), v.float(), scale)
    assert torch.allclose(got.float(), want, atol=1e-5), "float64: the output differs from softmax(scale * q k^T) v"


def test_on_the_device_of_q():
    """q, k and v on a device other than the CPU (PyTorch's meta device: shapes and dtypes, no values), for a
    prefill after a prefix and a decode: o is on that device, [n, Hq, D], float32. The browser's torch has only
    the CPU: there this test checks nothing."""
    g = rng()
    # the browser's torch has only the CPU: there the same checks run on it (a device mistake shows only locally)
    meta = torch.device("cpu" if mode() == "browser" else "meta")
    for n, L in ((3, 7), (g.randint(2, 4), g.randint(5, 8)), (1, g.randint(3, 8))):  # 3 new tokens after 4 first
        q, k, v, scale = case(g, n, L, 4, 2, 6)
        q, k, v = q.to(meta), k.to(meta), v.to(meta)
        try:
            got = utils.attend(q, k, v, scale)
        except (RuntimeError, NotImplementedError, TypeError) as e:
            if "write attend" in str(e):
                raise
            raise AssertionError(f"q, k and v on the meta device (n={n}, L={L}): it raised {type(e).__name__}: {e}; "
                                 "make every tensor you build (a mask, positions) on q.device") from None
        assert str(got.device) == str(meta), f"o must be on the device of q (meta here), got {got.device}"
        assert list(got.shape) == [n, 4, 6], f"the output has the shape of q, [{n}, 4, 6]"
        assert str(got.dtype) == "torch.float32", f"o is in the dtype of q, k and v (float32), not {got.dtype}"


def test_like_the_engine():
    """A random prefill after a prefix: the same output as the engine's, within 1e-5."""
    g = rng()
    q, k, v, scale = case(g, 4, 9, 4, 2, 6)
    got = utils.attend(q, k, v, scale)
    want = expected("minisgl.attention.utils:attend", q, k, v, scale)
    assert torch.allclose(got, want, atol=1e-5), "the output differs from the engine's"


def run(prompts):
    with engine() as llm:
        return generate(llm, prompts, 5) + generate(llm, prompts, 3)


def test_engine_tokens():
    """The tiny GQA model with your attention (prefills, reused prefixes, decodes): the engine's tokens."""
    prompts = hidden_prompts(3, min_len=4, max_len=12)
    assert run(prompts) == expected(run, prompts), "the tokens differ from the engine's"


def test_engine_fixed_prompts():
    """The fixed prompts: the engine's tokens."""
    assert run(PROMPT_IDS[:4]) == expected(run, PROMPT_IDS[:4]), "the tokens differ from the engine's"

"""Tests for tiny-engine: TinyEngine.attention (the cache rows it writes, the causal mask, GQA's head groups) on
chosen q/k/v, TinyEngine.generate (prefill, then one-token decodes at the right positions, EOS, refusals) on a
scripted forward, then the whole engine's tokens against the engine's own and Hugging Face transformers'."""

import torch
import transformers.models.llama.modeling_llama  # noqa: F401 - the warm judge imports it once, not each judging
import transformers.models.qwen3.modeling_qwen3  # noqa: F401 - the warm judge imports it once, not each judging

from judge.testing import expected, hidden_prompts, rng
from minisgl.testing import hf_greedy_with_margins, tiny_model
from minisgl.tiny_engine import TinyEngine

TINY = {"llama gqa": ("llama", True, False), "qwen3 gqa": ("qwen3", True, False), "qwen3 mha tied": ("qwen3", False, True)}


def make(name: str = "llama gqa", max_len: int = 64) -> TinyEngine:
    arch, gqa, tied = TINY[name]
    return TinyEngine(tiny_model(arch, gqa=gqa, tied=tied), max_len=max_len)


# ------------------------------------------------------------------------------- attention on chosen q/k/v

def chosen(eng: TinyEngine, seed: int, start: int, t: int):
    """Random q [t, heads, D], k, v [t, kv_heads, D]; eng.qkv returns them; every cache row of every layer holds
    noise (rows before start stand for earlier tokens); o_proj is the identity, so attention returns the heads'
    outputs side by side. x is [t, hidden] with hidden wider than heads * D (in Qwen3 models hidden and
    heads * head_dim differ: the scale is sqrt(head_dim), not sqrt(hidden / heads)). Returns (q, k, v, x)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(t, eng.heads, eng.head_dim, generator=g)
    k = torch.randn(t, eng.kv_heads, eng.head_dim, generator=g)
    v = torch.randn(t, eng.kv_heads, eng.head_dim, generator=g)
    eng.k.copy_(torch.randn(eng.k.shape, generator=g))
    eng.v.copy_(torch.randn(eng.v.shape, generator=g))
    eng.qkv = lambda i, x, pos: (q.clone(), k.clone(), v.clone())
    for i in range(eng.layers):
        eng.w[f"model.layers.{i}.self_attn.o_proj.weight"] = torch.eye(eng.heads * eng.head_dim)
    x = torch.randn(t, (eng.heads + 2) * eng.head_dim, generator=g)
    return q, k, v, x


def model_attention(eng: TinyEngine, q, keys, values, start: int) -> torch.Tensor:
    """The rule, one query and one head at a time: the query at position start+a, head h, attends over the keys at
    positions 0..start+a of K/V head h // (heads // kv_heads), scores scaled by 1/sqrt(D)."""
    t, heads, d = q.shape
    group = heads // eng.kv_heads
    out = torch.zeros(t, heads, d)
    for a in range(t):
        for h in range(heads):
            ks, vs = keys[: start + a + 1, h // group], values[: start + a + 1, h // group]
            out[a, h] = torch.softmax(ks @ q[a, h] / d**0.5, 0) @ vs
    return out.reshape(t, heads * d)


def run_chosen(name: str, seed: int, i: int, start: int, t: int):
    """attention(i, x, start) on chosen q/k/v: (its output, the rule's output, the cache before, the cache after)."""
    eng = make(name)
    q, k, v, x = chosen(eng, seed, start, t)
    before = (eng.k.clone(), eng.v.clone())
    keys, values = before[0][i].clone(), before[1][i].clone()
    keys[start:start + t], values[start:start + t] = k, v
    want = model_attention(eng, q, keys, values, start)
    got = eng.attention(i, x, start)
    return got, want, before, (eng.k.clone(), eng.v.clone()), (k, v)


def test_example_decode_reads_the_cache():
    """One decode token at position 5 (rows 0-4 of the cache hold the earlier tokens): its K/V go to row 5, and it
    attends over rows 0-5 (tiny Llama, 4 query heads sharing 2 K/V heads)."""
    got, want, _, (k_after, v_after), (k, v) = run_chosen("llama gqa", 0, 1, 5, 1)
    assert torch.equal(k_after[1, 5], k[0]), "the new token's K must be written at row 5 (its position) of layer 1"
    assert torch.equal(v_after[1, 5], v[0]), "the new token's V must be written at row 5 (its position) of layer 1"
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-4), \
        "the output: the query attends over the cached rows 0-4 and its own row 5"


def test_cache_rows_written_at_their_positions():
    """T tokens at positions start..start+T-1 write K/V rows start..start+T-1 of layer i and nothing else: the other
    rows and the other layer keep what they held."""
    g = rng()
    for name in ("llama gqa", "qwen3 mha tied"):
        i, start, t = g.randrange(2), g.randint(3, 30), g.randint(2, 6)
        _, _, (k0, v0), (k1, v1), (k, v) = run_chosen(name, g.randrange(2**31), i, start, t)
        where = f"({name}, layer {i}, start {start}, {t} tokens)"
        assert torch.equal(k1[i, start:start + t], k), f"K rows {start}..{start + t - 1} must hold the new keys {where}"
        assert torch.equal(v1[i, start:start + t], v), f"V rows {start}..{start + t - 1} must hold the new values {where}"
        k0[i, start:start + t], v0[i, start:start + t] = k, v
        assert torch.equal(k1, k0), f"no other row or layer of the K cache may change {where}"
        assert torch.equal(v1, v0), f"no other row or layer of the V cache may change {where}"


def test_prefill_from_position_zero():
    """A prefill (start 0, several tokens): the query at position a attends over positions 0..a, itself included."""
    g = rng()
    t = g.randint(3, 9)
    got, want, *_ = run_chosen("llama gqa", g.randrange(2**31), 0, 0, t)
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-4), \
        f"prefill of {t} tokens: query a sees keys 0..a (softmax over the keys, scores / sqrt(head_dim))"


def test_chunk_after_a_cached_prefix():
    """T tokens after `start` cached ones: the query at position start+a attends over positions 0..start+a (the
    mask is offset by start: a [T, start+T] mask, not a [T, T] one)."""
    g = rng()
    for name in ("llama gqa", "qwen3 gqa"):
        start, t = g.randint(2, 20), g.randint(2, 7)
        got, want, *_ = run_chosen(name, g.randrange(2**31), g.randrange(2), start, t)
        assert torch.allclose(got, want, atol=1e-5, rtol=1e-4), \
            f"{name}: {t} tokens at positions {start}..{start + t - 1}: query start+a sees keys 0..start+a"


def test_future_tokens_do_not_leak():
    """Changing the last token's q/k/v changes nothing in the outputs of the tokens before it."""
    g = rng()
    seed, start, t = g.randrange(2**31), g.choice([0, g.randint(1, 10)]), g.randint(3, 7)
    eng = make()
    q, k, v, x = chosen(eng, seed, start, t)
    first = eng.attention(0, x, start)
    eng2 = make()
    chosen(eng2, seed, start, t)
    q2, k2, v2 = q.clone(), k.clone(), v.clone()
    q2[-1], k2[-1], v2[-1] = 7.0, -5.0, 11.0
    eng2.qkv = lambda i, x, pos: (q2, k2, v2)
    second = eng2.attention(0, x, start)
    assert torch.allclose(second[:-1], first[:-1], atol=1e-5, rtol=1e-4), \
        f"{t} tokens from position {start}: the outputs of all but the last token must not depend on the last one"


def test_gqa_head_groups():
    """Query head h reads K/V head h // (heads // kv_heads): heads 0 and 1 share K/V head 0, heads 2 and 3 share
    K/V head 1 (repeat_interleave, not repeat); without GQA (4 K/V heads) head h reads K/V head h."""
    g = rng()
    for name in ("llama gqa", "qwen3 mha tied"):
        start, t = g.randint(1, 12), g.randint(1, 4)
        got, want, *_ = run_chosen(name, g.randrange(2**31), 0, start, t)
        eng = make(name)
        d, group = eng.head_dim, eng.heads // eng.kv_heads
        for h in range(eng.heads):
            block = got[:, h * d:(h + 1) * d]
            assert torch.allclose(block, want[:, h * d:(h + 1) * d], atol=1e-5, rtol=1e-4), \
                f"{name}: query head {h}'s output (columns {h * d}..{(h + 1) * d - 1}) must come from K/V head " \
                f"{h // group}"


def real_attention(name: str, seed: int, lengths: list[int], part: int):
    """The real weights: attention of both layers on chunks of random x, one after another; part 0: every chunk's
    outputs (layer 0's rows, then layer 1's, chunk after chunk), 1: the K cache, 2: the V cache (rows written)."""
    eng = make(name)
    g = torch.Generator().manual_seed(seed)
    outs, start = [], 0
    for t in lengths:
        x = torch.randn(t, eng.w["model.embed_tokens.weight"].shape[1], generator=g)
        outs += [eng.attention(i, x, start) for i in range(eng.layers)]
        start += t
    return [torch.cat(outs), eng.k[:, :start].clone(), eng.v[:, :start].clone()][part]


def test_real_weights_like_the_engine():
    """The real projections (qkv, then o_proj on the heads' outputs side by side): a prefill, then decodes and a
    chunk; the caches and each layer's outputs as the engine's own attention gives them."""
    g = rng()
    name = g.choice(sorted(TINY))
    seed, lengths = g.randrange(2**31), [g.randint(2, 8), 1, 1, g.randint(2, 4), 1]
    for part, what in ((1, "the K cache"), (2, "the V cache"), (0, "the outputs (o_proj applied to the heads' "
                                                                   "outputs side by side, head 0 first)")):
        got = real_attention(name, seed, lengths, part)
        want = expected(lambda: real_attention(name, seed, lengths, part))
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-4), f"{name}, chunks of {lengths} tokens: {what}"


# ------------------------------------------------------------------------------- generate on a scripted forward

class Script:
    """Stands in for eng.forward: records (ids, start) of each call; the logits of call n have their largest value
    at tokens[n] (the last one repeats), the others are noise below it."""

    def __init__(self, eng: TinyEngine, tokens: list[int], seed: int = 0, vocab: int = 100):
        self.tokens, self.calls, self.vocab = tokens, [], vocab
        self.kinds = []  # per call: (type of ids, types of its items, type of start)
        self.g = torch.Generator().manual_seed(seed)
        eng.forward = self

    def __call__(self, ids, start):
        self.calls.append(([int(t) for t in ids], int(start)))
        self.kinds.append((type(ids).__name__, sorted({type(t).__name__ for t in ids}), type(start).__name__))
        if len(self.calls) > 300:
            raise RuntimeError("generate ran more than 300 forwards: does it ever stop?")
        logits = torch.rand(self.vocab, generator=self.g)
        logits[self.tokens[min(len(self.calls) - 1, len(self.tokens) - 1)]] = 1.5
        return logits


def expected_calls(prompt: list[int], out: list[int]) -> list:
    """Prefill: the prompt at position 0; then each new token but the last, alone, at its own position."""
    return [(list(prompt), 0)] + [([tok], len(prompt) + j) for j, tok in enumerate(out[:-1])]


def test_example_prefill_then_decodes():
    """Prompt [11, 12, 13, 14], 4 new tokens: one forward of the prompt at position 0, then [7] at position 4, [3]
    at 5, [9] at 6; no forward after the last token."""
    eng = make(max_len=32)
    eng.eos = {99}
    script = Script(eng, [7, 3, 9, 5])
    out = eng.generate([11, 12, 13, 14], 4)
    assert out == [7, 3, 9, 5], "the argmax of each forward's logits, in order"
    calls = script.calls
    assert calls == [([11, 12, 13, 14], 0), ([7], 4), ([3], 5), ([9], 6)], \
        "the forwards, as (ids, start): the prompt once, then each new token alone at its position"


def test_decodes_reuse_the_cache():
    """Random prompts and lengths: exactly one prefill forward, then one forward of one token per further new token
    (the cache holds the rest), at positions len(prompt), len(prompt)+1, ..."""
    g = rng()
    for prompt in hidden_prompts(3, 1, 12, vocab=90, r=g):
        n = g.randint(2, 12)
        tokens = [g.randrange(1, 90) for _ in range(n)]
        eng = make(max_len=40)
        eng.eos = {95}
        script = Script(eng, tokens, g.randrange(2**31))
        out = eng.generate(prompt, n)
        assert out == tokens, f"prompt of {len(prompt)}, {n} new tokens: the argmax of each forward, in order"
        calls = script.calls
        assert calls == expected_calls(prompt, out), \
            f"prompt of {len(prompt)}, {n} new tokens: the forwards, as (ids, start): the prompt once at 0, then " \
            "each new token but the last alone, at its position"
        kinds = script.kinds
        assert kinds == [("list", ["int"], "int")] * n, \
            "each forward gets a list of Python ints and an int position: self.forward([token], position), the " \
            "token as the int appended to the result, not the argmax tensor"


def test_one_new_token_is_one_forward():
    """max_new_tokens=1: the prefill's argmax is the answer; no decode forward at all."""
    g = rng()
    prompt = hidden_prompts(1, 2, 9, vocab=90, r=g)[0]
    tok = g.randrange(1, 90)
    eng = make(max_len=16)
    script = Script(eng, [tok, 3])
    out = eng.generate(prompt, 1)
    assert out == [tok], "one new token: the prefill's argmax"
    calls = script.calls
    assert calls == [(prompt, 0)], "one new token needs the prefill only"


def test_tokens_are_python_ints():
    """generate returns a list of Python ints (not tensors)."""
    eng = make(max_len=16)
    Script(eng, [4, 8, 15])
    out = eng.generate([1, 2], 3)
    kinds = (type(out).__name__, [type(t).__name__ for t in out])
    assert kinds == ("list", ["int", "int", "int"]), "a list of Python ints (int(logits.argmax()))"


def test_eos_stops_and_is_returned():
    """With stop_at_eos (the default), generation stops at the first EOS id (any of self.eos), which is returned as
    the last token; no forward runs after it."""
    g = rng()
    eos = {g.randrange(60, 80), g.randrange(80, 100)}
    for stop_id in sorted(eos):  # each of the EOS ids stops generation, not only one of them
        tokens = [g.randrange(1, 60) for _ in range(10)]
        at = g.randint(1, 7)
        tokens[at] = stop_id
        eng = make(max_len=40)
        eng.eos = set(eos)
        script = Script(eng, tokens, g.randrange(2**31))
        prompt = hidden_prompts(1, 2, 8, vocab=60, r=g)[0]
        out = eng.generate(prompt, 10)
        assert out == tokens[:at + 1], \
            f"EOS ids {sorted(eos)}, {stop_id} at step {at}: the tokens up to and including the EOS (any id of self.eos)"
        calls = script.calls
        assert calls == expected_calls(prompt, tokens[:at + 1]), "no forward after the EOS token"


def test_stop_at_eos_false_runs_on():
    """stop_at_eos=False: EOS is a token like any other; exactly max_new_tokens come back."""
    g = rng()
    tokens = [g.randrange(1, 60) for _ in range(9)]
    eos = tokens[g.randint(0, 5)]
    eng = make(max_len=40)
    eng.eos = {eos}
    Script(eng, tokens, g.randrange(2**31))
    out = eng.generate([5, 6, 7], 9, stop_at_eos=False)
    assert out == tokens, f"stop_at_eos=False: the EOS id {eos} does not stop generation"


def refused(eng: TinyEngine, prompt, n):
    """(whether generate raised ValueError, the forwards it ran before)."""
    script = Script(eng, [3])
    try:
        eng.generate(prompt, n)
        raised = False
    except ValueError:
        raised = True
    return raised, len(script.calls)


def test_refusals():
    """ValueError before any forward for an empty prompt, for len(prompt) + max_new_tokens > max_len, and for
    max_new_tokens < 1; a request that exactly fills the cache is accepted."""
    g = rng()
    max_len = g.randint(12, 30)
    eng = make(max_len=max_len)
    eng.eos = {99}
    n = g.randint(2, 6)
    fit = [g.randrange(1, 90) for _ in range(max_len - n)]
    got = refused(eng, fit + [1], n)
    assert got == (True, 0), f"max_len {max_len}: {len(fit) + 1} prompt tokens + {n} new ones do not fit: " \
                             "(ValueError raised, forwards run before it)"
    got = refused(eng, fit[:2], max_len)
    assert got == (True, 0), f"max_len {max_len}: 2 prompt tokens + {max_len} new ones do not fit either"
    got = refused(eng, fit, n)
    assert got == (False, n), f"max_len {max_len}: {len(fit)} prompt tokens + {n} new ones exactly fit: accepted, " \
                              f"{n} forwards"
    got = refused(eng, [], n)
    assert got == (True, 0), "an empty prompt: (ValueError raised, forwards run before it)"
    got = refused(eng, [5, 6], 0)
    assert got == (True, 0), "max_new_tokens=0: (ValueError raised, forwards run before it)"
    got = refused(eng, [5, 6], -g.randint(1, 5))
    assert got == (True, 0), "a negative max_new_tokens: (ValueError raised, forwards run before it)"


# ------------------------------------------------------------------------------- the whole engine

def tokens(name: str, prompts, n: int, max_len: int = 64) -> list[list[int]]:
    eng = make(name, max_len=max_len)
    return [eng.generate(list(p), n, stop_at_eos=False) for p in prompts]


def test_example_engine_same_tokens_as_the_engine():
    """The tiny Llama (GQA), two prompts one after the other on one engine, 6 tokens each: the engine's tokens."""
    prompts = [[17, 301, 45], [88, 12, 409, 230, 7, 156, 391]]
    got = tokens("llama gqa", prompts, 6)
    want = expected(lambda: tokens("llama gqa", prompts, 6))
    assert got == want, "the greedy tokens of the engine's own code"


def test_engine_fills_the_cache_same_tokens():
    """A prompt and new tokens that exactly fill max_len, on each tiny model: the engine's tokens."""
    g = rng()
    for name in sorted(TINY):
        max_len = g.randint(16, 28)
        prompt = hidden_prompts(1, 3, 10, r=g)[0]
        n = max_len - len(prompt)
        got = tokens(name, [prompt], n, max_len)
        want = expected(lambda: tokens(name, [prompt], n, max_len))
        assert got == want, f"{name}, max_len {max_len}, a prompt of {len(prompt)}: the engine's tokens"


def differences(got, want, margins) -> list:
    """(prompt, step, ours, transformers') of the first difference in each prompt that is not a near-tie (the two
    best logits of transformers within 1e-4: float rounding may pick either)."""
    out = []
    for i, (a, b, m) in enumerate(zip(got, want, margins)):
        step = next((s for s, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if (step is not None and m[step] >= 1e-4) or len(a) != len(b):
            out.append((i, step, a, b))
    return out


def test_engine_same_tokens_as_transformers():
    """Random prompts on a tiny Llama or Qwen3 (GQA or not, tied or not): greedy tokens equal to Hugging Face
    transformers' (a near-tie may go either way)."""
    g = rng()
    name = g.choice(sorted(TINY))
    prompts = hidden_prompts(2, 1, 12, r=g) + [[g.randrange(1, 512)]]
    got = tokens(name, prompts, 8)
    arch, gqa, tied = TINY[name]
    want, margins = hf_greedy_with_margins(tiny_model(arch, gqa=gqa, tied=tied), prompts, 8)
    assert differences(got, want, margins) == [], \
        f"{name}: (prompt, first differing step, your tokens, transformers') where they differ"

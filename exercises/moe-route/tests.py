"""Tests for moe-route: route() on fixed rows (ties, k == E), random logits of every float dtype with and without
renormalisation (the exact answer computed here, in float64), and a tiny Qwen3-MoE against transformers."""

import random

import torch
import transformers.models.qwen3_moe.modeling_qwen3_moe  # noqa: F401 - the warm judge imports it once, not each judging

from judge.testing import TIE, engine_device, hidden_prompts, rng
from minisgl.moe.route import route

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}


def logits_from(r, t: int, e: int, dtype=torch.float32, scale: float = 2.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(r.randrange(1 << 30))
    return (torch.randn(t, e, generator=g) * scale).to(dtype)


def call(logits: torch.Tensor, k: int, renormalize: bool):
    """route() on a copy of the logits: (weights, ids)."""
    weights, ids = route(logits.clone(), k, renormalize)
    return weights, ids


def exact(logits: torch.Tensor, ids: torch.Tensor, renormalize: bool) -> torch.Tensor:
    """The exact weights (float64) of the experts ``ids`` chose: their probabilities, renormalised if asked."""
    w = torch.softmax(logits.double(), dim=-1).gather(-1, ids)
    return w / w.sum(-1, keepdim=True) if renormalize else w


def rounds_right(got: torch.Tensor, want: torch.Tensor) -> bool:
    """got is want rounded to got's dtype once (either neighbour where want is within float32's error of a tie)."""
    lo, hi = (want * (1 - 1e-5)).to(got.dtype), (want * (1 + 1e-5)).to(got.dtype)
    return bool(((got == lo) | (got == hi)).all())


def check_form(weights, ids, logits: torch.Tensor, k: int, what: str) -> None:
    t = logits.shape[0]
    shapes = (tuple(weights.shape), tuple(ids.shape))
    assert shapes == ((t, k), (t, k)), f"{what}: the shapes of (weights, ids) are [T, k] = [{t}, {k}]"
    dtypes = (str(weights.dtype), str(ids.dtype))
    assert dtypes == (str(logits.dtype), "torch.int64"), \
        f"{what}: weights in the logits' dtype (cast back at the end), ids int64"


def check_choice(ids, logits: torch.Tensor, k: int, what: str) -> None:
    e = logits.shape[1]
    rows = ids.tolist()
    distinct = all(len(set(row)) == k and min(row) >= 0 and max(row) < e for row in rows)
    assert distinct, f"{what}: each row holds {k} different experts of 0..{e - 1}"
    probs = torch.softmax(logits.double(), dim=-1)
    chosen = probs.gather(-1, ids)
    best = probs.topk(k, dim=-1).values
    top = torch.allclose(chosen.sort(dim=-1, descending=True).values, best, rtol=1e-6, atol=1e-12)
    assert top, f"{what}: the experts chosen are the {k} most probable ones (softmax over all {e} experts)"
    ordered = bool((chosen[:, :-1] >= chosen[:, 1:] * (1 - 1e-6)).all())
    assert ordered, f"{what}: the most probable expert first, in descending order of probability"


def check_weights(weights, ids, logits: torch.Tensor, renormalize: bool, what: str) -> None:
    want = exact(logits, ids, renormalize)
    if weights.dtype == torch.float32:
        close = torch.allclose(weights.double(), want, rtol=1e-5, atol=1e-9)
    elif weights.dtype == torch.float64:
        close = torch.allclose(weights, want, rtol=1e-5, atol=1e-9)
    else:
        close = rounds_right(weights, want)
    norm = "renormalised to sum to 1" if renormalize else "the probabilities themselves (not renormalised)"
    assert close, f"{what}: the weights are {norm}, computed in float32 and rounded to the logits' dtype once"


def check(logits: torch.Tensor, k: int, renormalize: bool, what: str) -> None:
    weights, ids = call(logits, k, renormalize)
    what = f"{what} ({logits.dtype}, T={logits.shape[0]}, E={logits.shape[1]}, k={k}, renormalize={renormalize})"
    check_form(weights, ids, logits, k, what)
    check_choice(ids, logits, k, what)
    check_weights(weights, ids, logits, renormalize, what)


# ------------------------------------------------------------------------------------------- examples

ROWS = [[2.0, 1.0, 0.5, -1.0], [0.0, 3.0, 2.5, 1.0]]


def test_example_raw_probabilities():
    """Two tokens, four experts, top-2, not renormalised: the two largest of the softmax over all four experts."""
    logits = torch.tensor(ROWS)
    weights, ids = call(logits, 2, False)
    assert ids.tolist() == [[0, 1], [1, 2]], "the two most probable experts of each row, the most probable first"
    want = torch.softmax(torch.tensor(ROWS, dtype=torch.float64), -1)[[[0], [1]], [[0, 1], [1, 2]]]
    close = torch.allclose(weights.double(), want, rtol=1e-6)
    assert close, "the weights are the probabilities over all 4 experts (softmax first, then top-k)"


def test_example_renormalised():
    """The same rows with renormalize=True: the two weights of a row are divided by their sum."""
    logits = torch.tensor(ROWS)
    weights, ids = call(logits, 2, True)
    assert ids.tolist() == [[0, 1], [1, 2]], "the same experts, the most probable first"
    sums = weights.double().sum(-1)
    assert torch.allclose(sums, torch.ones(2, dtype=torch.float64), atol=1e-6), "renormalised: each row sums to 1"
    check_weights(weights, ids, logits, True, "renormalised")


def test_example_bfloat16():
    """bfloat16 logits: the weights come back in bfloat16, the ids in int64."""
    logits = torch.tensor(ROWS).to(torch.bfloat16)
    weights, ids = call(logits, 2, False)
    dtypes = (str(weights.dtype), str(ids.dtype))
    assert dtypes == ("torch.bfloat16", "torch.int64"), "(weights, ids) dtypes: weights cast back to bfloat16"
    assert ids.tolist() == [[0, 1], [1, 2]], "the two most probable experts, the most probable first"


# ------------------------------------------------------------------------------------------- hidden

def test_random_float32_rows():
    """Random float32 logits, several T, E and k, both settings of renormalize."""
    r = rng()
    for _ in range(6):
        e = r.choice([4, 8, 16, 60])
        t, k = r.randint(1, 40), r.randint(1, min(e, 8))
        logits = logits_from(r, t, e, scale=r.choice([0.5, 2.0, 6.0]))
        for renormalize in (False, True):
            check(logits, k, renormalize, "random float32")


def test_rows_far_from_zero_and_from_each_other():
    """Each token's softmax is its own row's: rows shifted by about a hundred (exp overflows float32 above 88 and
    underflows to 0 below -103 without the row's maximum taken out), rows far apart in one call."""
    r = rng()
    e = r.choice([8, 16])
    t = r.randint(4, 12)
    base = logits_from(r, t, e)
    shifts = torch.tensor([r.choice([-120.0, -60.0, 0.0, 60.0, 95.0]) for _ in range(t)])[:, None]
    shifts[0], shifts[-1] = 95.0, -120.0  # one row far above, one far below: both in every call
    for renormalize in (False, True):
        check(base + shifts, 2, renormalize, "rows shifted by about a hundred")


def test_raw_and_renormalised_differ_by_the_sum():
    """renormalize=False gives the probabilities; True gives them divided by their row's sum (one call each)."""
    r = rng()
    logits = logits_from(r, r.randint(8, 24), 8)
    k = r.randint(2, 4)
    raw, ids = call(logits, k, False)
    norm, ids2 = call(logits, k, True)
    same = torch.equal(ids, ids2)
    assert same, "renormalize changes the weights, not which experts are chosen"
    check_weights(raw, ids, logits, False, "renormalize=False")
    check_weights(norm, ids, logits, True, "renormalize=True")
    sums = norm.double().sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5), "renormalize=True: every row sums to 1"


def test_every_expert_chosen():
    """k == E keeps every expert: all E ids once per row, by descending probability."""
    r = rng()
    check(torch.tensor([[0.3, -1.2, 2.0, 0.7]]), 4, False, "k == E")
    check(torch.tensor([[0.3, -1.2, 2.0, 0.7]]), 4, True, "k == E")
    e = r.choice([3, 5, 8])
    logits = logits_from(r, r.randint(2, 10), e)
    check(logits, e, False, "k == E")
    check(logits, e, True, "k == E")
    check(logits_from(r, 5, e, torch.bfloat16), e, True, "k == E")


def test_one_expert():
    """k == 1: the most probable expert; renormalised, its weight is exactly 1 (its probability divided by itself,
    on 64 fixed rows too: multiplying by a reciprocal is 1 ulp short on some)."""
    r = rng()
    logits = torch.cat([logits_from(r, r.randint(3, 12), 8), logits_from(random.Random(1), 64, 8)])
    check(logits, 1, False, "k == 1")
    weights, _ = call(logits, 1, True)
    ones = weights.tolist() == [[1.0]] * logits.shape[0]
    assert ones, "k == 1, renormalised: the one weight is its own sum's share, 1.0"


def test_ties():
    """Equal logits: any of the tied experts may be chosen, but each chosen expert once, with its probability."""
    r = rng()
    c = round(r.uniform(-2.0, 2.0), 2)
    rows = [[1.0, 3.0, 3.0, 0.0], [c] * 4, [0.5, 0.5, 2.0, 0.5], [-1.0, 2.0, -1.0, 2.0]]
    logits = torch.tensor(rows)
    for k in (1, 2, 3):
        for renormalize in (False, True):
            check(logits, k, renormalize, "tied logits")
    weights, _ = call(torch.tensor([[c] * 4]), 3, False)
    assert torch.allclose(weights, torch.full((1, 3), 0.25)), "four equal logits: each probability is 1/4"
    r8 = [float(r.choice([0, 1, 2])) for _ in range(8)]
    check(torch.tensor([r8] * 3).to(torch.bfloat16), 4, True, "tied bfloat16 logits")


def test_low_precision_rounded_once():
    """bfloat16 and float16 logits: the softmax and the renormalisation in float32, one rounding at the end."""
    r = rng()
    for name in ("bfloat16", "float16", "bfloat16"):
        e = r.choice([8, 16, 64])
        logits = logits_from(r, r.randint(48, 96), e, DTYPES[name], scale=r.choice([1.0, 3.0]))
        k = r.randint(2, 4)
        for renormalize in (True, False):
            check(logits, k, renormalize, "low precision")


def test_float64_logits_computed_in_float32():
    """float64 logits: the weights come back as float64 holding float32 results (the softmax is float32's)."""
    r = rng()
    logits = logits_from(r, r.randint(10, 30), 8, torch.float64)
    for renormalize in (False, True):
        weights, ids = call(logits, 2, renormalize)
        check_form(weights, ids, logits, 2, f"float64, renormalize={renormalize}")
        f32 = torch.equal(weights, weights.float().double())
        assert f32, f"float64 logits, renormalize={renormalize}: every weight is a float32 result (softmax and " \
                    "renormalisation in float32, then cast to float64)"
        check_choice(ids, logits, 2, f"float64, renormalize={renormalize}")
        check_weights(weights, ids, logits, renormalize, f"float64, renormalize={renormalize}")


def test_logits_left_as_they_were():
    """route does not change router_logits (float32 and bfloat16)."""
    r = rng()
    for dtype in (torch.float32, torch.bfloat16):
        logits = logits_from(r, r.randint(4, 12), 8, dtype)
        before = logits.clone()
        route(logits, 2, True)
        same = torch.equal(logits, before)
        assert same, f"{dtype}: router_logits must be left as it was"


# ------------------------------------------------------------------------------------------- end to end

def engine_tokens(path: str, prompts, n: int, page_size: int) -> list:
    from minisgl.core import SamplingParams
    from minisgl.llm import LLM

    llm = LLM(path, dtype=torch.float32, max_running_req=8, num_page_override=256, max_seq_len_override=64,
              attention_backend="torch_static" if engine_device() == "cuda" else "torch", device=engine_device(),
              cuda_graph_max_bs=0, page_size=page_size, moe_backend="torch")
    try:
        out = llm.generate([list(p) for p in prompts], SamplingParams(max_tokens=n, ignore_eos=True))
    finally:
        llm.shutdown()
    return [list(o["token_ids"]) for o in out]


def test_engine_same_tokens_as_transformers():
    """A tiny random Qwen3-MoE, with and without norm_topk_prob: the engine with your router gives transformers'
    greedy tokens (a near-tie may go either way)."""
    from minisgl.testing import greedy_differences, hf_greedy_with_margins, tiny_moe

    r = rng()
    prompts = hidden_prompts(3, 2, 12, r=r)
    for norm in (False, True):
        path = tiny_moe(norm, r.randrange(1000))
        got = engine_tokens(path, prompts, 6, r.choice([1, 2, 4]))
        want, margins = hf_greedy_with_margins(path, prompts, 6)
        assert greedy_differences(got, want, margins, TIE) == [], \
            f"norm_topk_prob={norm}: (prompt, first differing step, your tokens, transformers') where they differ"

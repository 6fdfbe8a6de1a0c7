"""Tests for filtered-probs: random logits against a direct computation, the edges, then seeded sampling."""

import math

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.engine import sample


def direct(logits: list[float], t: float, top_k: int, top_p: float) -> list[float]:
    """The statement's three steps in plain Python."""
    m = max(x / t for x in logits)
    e = [math.exp(x / t - m) for x in logits]
    p = [x / sum(e) for x in e]
    order = sorted(range(len(p)), key=lambda i: -p[i])
    keep = set(order)
    if 0 < top_k < len(p):
        keep = set(order[:top_k])
    if top_p < 1.0:
        ranked = [i for i in order if i in keep]
        total = sum(p[i] for i in ranked)
        before, nucleus = 0.0, set()
        for i in ranked:
            if before < top_p * total:
                nucleus.add(i)
            before += p[i]
        keep = nucleus
    kept = sum(p[i] for i in keep)
    return [p[i] / kept if i in keep else 0.0 for i in range(len(p))]


def random_logits(g, n: int) -> list[float]:
    return [round(g.uniform(-4.0, 4.0), 3) + i * 1e-4 for i in range(n)]  # distinct: no ties


def off_boundary(logits: list[float], t: float, top_k: int, top_p: float) -> float:
    """top_p moved (if needed) so that no token's mass-before sits within 1e-4 of the cut: float32 and float64
    rounding then agree on which tokens are kept."""
    if top_p >= 1.0:
        return top_p
    p = direct(logits, t, top_k, 1.0)
    ranked = sorted((x for x in p if x > 0), reverse=True)
    while True:
        before = [sum(ranked[:i]) for i in range(len(ranked))]
        if all(abs(b - top_p) > 1e-4 for b in before):
            return top_p
        top_p = round(top_p + 0.003, 6)


def check(logits: list[float], t: float, top_k: int = -1, top_p: float = 1.0) -> None:
    top_p = off_boundary(logits, t, top_k, top_p)
    what = f"temperature={t}, top_k={top_k}, top_p={top_p}"
    params = SamplingParams(temperature=t, top_k=top_k, top_p=top_p)
    try:
        got, error = sample.filtered_probs(torch.tensor(logits, dtype=torch.float32), params), None
    except Exception as e:  # noqa: BLE001 - reported as the failure of this case
        got, error = None, f"{type(e).__name__}: {e}"
    assert error is None, f"{what} over {len(logits)} tokens must work; it raised {error}"
    assert list(got.shape) == [len(logits)], f"{what}: the result has one probability per token"
    assert str(got.dtype) == "torch.float32", f"{what}: the result must be float32, got {got.dtype}"
    want = direct(logits, t, top_k, top_p)
    kept, want_kept = (got > 0).tolist(), [w > 0 for w in want]
    assert kept == want_kept, (f"{what}: the wrong tokens are kept: {sum(kept)} kept where the rule keeps "
                               f"{sum(want_kept)}")
    assert abs(float(got.sum()) - 1.0) < 1e-5, f"{what}: the probabilities must sum to 1 (renormalise)"
    close = torch.allclose(got, torch.tensor(want, dtype=torch.float32), atol=1e-6)
    assert close, f"{what}: the probabilities differ from softmax(logits / temperature) restricted and renormalised"


def test_example_temperature_only():
    """Temperature alone: softmax(logits / T), nothing cut."""
    check([1.0, 2.5, -0.5, 0.3, 1.7], 0.7)


def test_example_nucleus():
    """[0.5, 0.3, 0.15, 0.05] with top_p = 0.75 keeps two tokens (0.5 + 0.3 reaches it); 0.85 keeps three."""
    logits = [math.log(x) for x in (0.5, 0.3, 0.15, 0.05)]
    check(logits, 1.0, top_p=0.75)
    check(logits, 1.0, top_p=0.85)


def test_temperatures():
    """Random logits at random temperatures, below and above 1; and cold ones (0.05 and below 0.1), which divide
    the logits as they are: no floor on the temperature."""
    check([1.0, 1.1, 0.95, 1.2, 0.8, 1.15], 0.05)
    g = rng()
    close = [round(g.uniform(-0.3, 0.3), 3) + i * 1e-4 for i in range(g.randint(6, 20))]  # near logits: not one-hot
    check(close, round(g.uniform(0.02, 0.09), 3))
    for t in (round(g.uniform(0.2, 0.9), 2), round(g.uniform(1.1, 3.0), 2)):
        check(random_logits(g, g.randint(7, 40)), t)


def test_top_p_one_cuts_nothing():
    """top_p = 1 cuts nothing (the nucleus is only for top_p < 1): with one dominant token, the others' mass is below
    float32's rounding of the running sum, and every one of them must still keep its nonzero probability."""
    check([6.0, 0.0, -6.5, 2.0, -1.2, 1.1], 0.5)
    check([6.0, 0.0, -6.5, 2.0, -1.2, 1.1], 0.5, top_k=4)
    g = rng()
    for _ in range(2):
        n = g.randint(6, 20)
        logits = random_logits(g, n)
        logits[g.randrange(n)] = round(g.uniform(9.0, 12.0), 3)  # the dominant token
        check(logits, round(g.uniform(0.35, 0.6), 2), top_k=g.choice([-1, g.randint(3, n - 1)]))


def test_top_k():
    """Top-k alone: the k most likely kept (k = 1, k = vocab - 1 too); k >= the vocabulary keeps everything."""
    g = rng()
    n = g.randint(12, 40)
    check(random_logits(g, n), round(g.uniform(0.5, 1.5), 2), top_k=g.randint(2, 9))
    check(random_logits(g, n), 1.0, top_k=1)
    check(random_logits(g, n), 1.0, top_k=n - 1)  # one below the vocabulary: the least likely token dropped
    check(random_logits(g, n), 1.0, top_k=n)
    check(random_logits(g, n), 1.0, top_k=n + g.randint(1, 5))


def test_top_p():
    """Top-p alone: the smallest nucleus; a tiny top_p keeps only the most likely token."""
    g = rng()
    for top_p in (round(g.uniform(0.3, 0.95), 3), 0.001):
        check(random_logits(g, g.randint(10, 40)), round(g.uniform(0.5, 1.5), 2), top_p=top_p)


def test_top_k_then_top_p():
    """Both: top-p applies to what top-k left (its mass), not to the whole distribution."""
    g = rng()
    # a flat tail makes the two orders differ: top_p of the top-k mass is a tighter cut
    logits = [math.log(x) for x in (0.4, 0.3, 0.2, 0.1)]
    check(logits, 1.0, top_k=2, top_p=0.55)
    for _ in range(4):
        n = g.randint(10, 40)
        check(random_logits(g, n), round(g.uniform(0.5, 1.5), 2), top_k=g.randint(3, n - 1),
              top_p=round(g.uniform(0.4, 0.95), 3))


def test_float16_and_float64_logits_give_float32():
    """Computed in float32 and returned as float32, whatever the logits' dtype: float16 logits (softmax in float16
    would lose precision) and float64 logits, against the direct computation on the same values."""
    g = rng()
    for dtype in (torch.float16, torch.float64):
        for top_k in (-1, g.randint(3, 8)):
            n = g.randint(12, 30)
            row = torch.tensor(random_logits(g, n), dtype=torch.float32).to(dtype)
            values = [float(x) for x in row.tolist()]
            t = round(g.uniform(0.5, 1.5), 2)
            got = sample.filtered_probs(row, SamplingParams(temperature=t, top_k=top_k))
            what = f"{dtype} logits, temperature={t}, top_k={top_k}"
            assert str(got.dtype) == "torch.float32", f"{what}: the result must be float32, got {got.dtype}"
            assert list(got.shape) == [n], f"{what}: one probability per token"
            want = torch.tensor(direct(values, t, top_k, 1.0), dtype=torch.float32)
            assert torch.allclose(got.float(), want, atol=1e-6), \
                f"{what}: the probabilities differ from softmax computed in float32"


def test_like_the_engine():
    """Random parameters: the same probabilities as the engine's, within 1e-6."""
    g = rng()
    logits = torch.tensor(random_logits(g, 33), dtype=torch.float32)
    params = SamplingParams(temperature=round(g.uniform(0.4, 1.6), 2), top_k=g.randint(4, 20),
                            top_p=round(g.uniform(0.5, 0.95), 3))
    got = sample.filtered_probs(logits, params)
    want = expected("minisgl.engine.sample:filtered_probs", logits, params)
    assert torch.allclose(got, want, atol=1e-6), "the probabilities differ from the engine's"


def run(prompts, seeds):
    """Seeded sampling with the tiny model: each prompt with its own seed, temperature, top_k and top_p."""
    with engine() as llm:
        params = [SamplingParams(temperature=0.9, top_k=12, top_p=0.9, max_tokens=6, ignore_eos=True, seed=s)
                  for s in seeds]
        return [list(o["token_ids"]) for o in llm.generate(prompts, params)]


def test_engine_seeded_sampling():
    """Seeded requests on the tiny model: the same tokens as the engine's (same distribution, same draws)."""
    g = rng()
    prompts = hidden_prompts(3, min_len=3, max_len=10)
    seeds = [g.randrange(1, 10_000) for _ in prompts]
    assert run(prompts, seeds) == expected(run, prompts, seeds), "the sampled tokens differ from the engine's"

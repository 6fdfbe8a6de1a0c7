"""Tests for batched-sampler: greedy rows, seeded draws, independence from the batch, the tiny model."""

import random

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.engine.sample import Sampler, filtered_probs

CPU = torch.device("cpu")
GREEDY = SamplingParams()


def logits_of(g, bs: int, vocab: int) -> torch.Tensor:
    rows = [[round(g.uniform(-3.0, 3.0), 3) + j * 1e-4 for j in range(vocab)] for _ in range(bs)]
    return torch.tensor(rows, dtype=torch.float32)


def gens(seeds):
    return [torch.Generator().manual_seed(s) if s is not None else None for s in seeds]


def draw(logits, params, seeds) -> list[int]:
    """The sampler on fresh generators made from the seeds."""
    out = Sampler(CPU).sample(logits, params, gens(seeds))
    return out.tolist()


def sampled(g) -> SamplingParams:
    return SamplingParams(temperature=round(g.uniform(0.6, 1.5), 2), top_k=g.choice([-1, g.randint(3, 12)]),
                          top_p=g.choice([1.0, round(g.uniform(0.6, 0.95), 2)]))


def test_example_all_greedy():
    """Every row greedy: the argmax of each row, as int32."""
    logits = torch.tensor([[0.1, 2.0, -1.0, 0.5], [3.0, 0.2, 0.1, 2.9], [-1.0, -2.0, -0.5, -0.7]])
    out = Sampler(CPU).sample(logits, [GREEDY] * 3, [None] * 3)
    assert str(out.dtype) == "torch.int32", f"the token ids must be int32, got {out.dtype}"
    assert out.tolist() == [1, 0, 2], "a greedy row's token is the argmax of its row"


def test_example_a_seeded_row():
    """One greedy row and one seeded sampled row: argmax, and the draw of the row's own generator."""
    g = random.Random(7)
    logits = logits_of(g, 2, 20)
    params = [GREEDY, SamplingParams(temperature=0.9, top_k=5)]
    got = draw(logits, params, [None, 1234])
    assert got[0] == int(logits[0].argmax()), "row 0 is greedy: its argmax"
    assert got == expected(draw, logits, params, [None, 1234]), \
        "row 1: one multinomial draw from filtered_probs with its own generator"


def test_example_each_row_its_own_generator():
    """Four seeded sampled rows: each row's token is the draw of its own generator (not a shared or global one)."""
    g = random.Random(11)
    logits = logits_of(g, 4, 20)
    params = [SamplingParams(temperature=1.5)] * 4
    seeds = [11, 222, 3333, 44444]
    got = draw(logits, params, seeds)
    assert got == expected(draw, logits, params, seeds), \
        "each row: one multinomial draw from its filtered_probs with its own generator (generators[i])"


def test_random_mixed_batches():
    """Random batches of greedy and seeded rows: every row equals the engine's."""
    g = rng()
    for _ in range(4):
        bs, vocab = g.randint(3, 7), g.randint(15, 40)
        logits = logits_of(g, bs, vocab)
        params = [GREEDY if g.random() < 0.4 else sampled(g) for _ in range(bs)]
        seeds = [g.randrange(1, 99_999) for _ in range(bs)]
        got = draw(logits, params, seeds)
        greedy = [int(logits[i].argmax()) for i in range(bs) if params[i].is_greedy]
        assert [t for t, p in zip(got, params) if p.is_greedy] == greedy, "greedy rows: the argmax of the row"
        assert got == expected(draw, logits, params, seeds), "the tokens differ from the engine's (same seeds)"


def test_seeded_rows_do_not_depend_on_the_batch():
    """A seeded request gets the same token alone, first, or last in a batch with other requests."""
    g = rng()
    vocab = g.randint(20, 40)
    row = logits_of(g, 1, vocab)
    p, seed = sampled(g), g.randrange(1, 99_999)
    alone = draw(row, [p], [seed])[0]
    others = logits_of(g, 3, vocab)
    other_params = [sampled(g), GREEDY, sampled(g)]
    other_seeds = [g.randrange(1, 99_999), None, g.randrange(1, 99_999)]
    first = draw(torch.cat([row, others]), [p] + other_params, [seed] + other_seeds)[0]
    last = draw(torch.cat([others, row]), other_params + [p], other_seeds + [seed])[-1]
    got = [alone, first, last]
    assert got == [alone] * 3, "a seeded row must draw from its own generator only: alone, first and last agree"


def test_sampled_tokens_stay_in_top_k():
    """top_k = 3 on a flat row: over many seeds every token is one of the 3 most likely."""
    g = rng()
    vocab = g.randint(25, 40)
    logits = logits_of(g, 1, vocab) * 0.1
    top3 = sorted(torch.topk(logits[0], 3).indices.tolist())
    params = [SamplingParams(temperature=1.0, top_k=3)]
    first = g.randrange(1000)
    tokens = {draw(logits, params, [s])[0] for s in range(first, first + 40)}  # 40 seeds, whatever the draw
    outside = sorted(tokens - set(top3))
    assert outside == [], f"tokens {outside} are outside the top 3 {top3}: sample from filtered_probs"


def probe(gen: torch.Generator) -> list[int]:
    """The next draws of a generator (to see whether something consumed it)."""
    return torch.multinomial(torch.ones(50), 5, generator=gen).tolist()


def test_greedy_rows_leave_their_generator_alone():
    """Greedy rows (temperature 0, or top_k = 1 at any temperature) in a mixed batch draw nothing."""
    g = rng()
    logits = logits_of(g, 3, 30)
    s0, s1, s2 = (g.randrange(1, 99_999) for _ in range(3))
    generators = gens([s0, s1, s2])
    params = [SamplingParams(temperature=1.3, top_k=1), sampled(g), SamplingParams(temperature=0.0)]
    out = Sampler(CPU).sample(logits, params, generators)
    assert out.tolist()[0] == int(logits[0].argmax()), "top_k = 1 is greedy: the argmax"
    untouched = probe(generators[0]) == probe(torch.Generator().manual_seed(s0)) and \
        probe(generators[2]) == probe(torch.Generator().manual_seed(s2))
    assert untouched, "a greedy row must not draw from its generator"


def one_draw(logits_row, p, seed):
    """A seeded row's token as the statement writes it, and its generator after that one draw."""
    gen = torch.Generator().manual_seed(seed)
    token = int(torch.multinomial(filtered_probs(logits_row, p), 1, generator=gen)[0])
    return token, gen


def test_mixed_batches_are_int32_on_the_device_of_logits():
    """The ids are int32 on the device of logits (not the Sampler's), in all-greedy and in mixed batches."""
    g = rng()
    logits = logits_of(g, 3, 20)
    sampler = Sampler(torch.device("cuda"))  # a device the logits are not on: the output follows the logits
    for params in ([GREEDY] * 3, [GREEDY, sampled(g), SamplingParams(temperature=1.0)]):
        out = sampler.sample(logits, params, gens([g.randrange(1, 99_999) for _ in range(3)]))
        assert str(out.dtype) == "torch.int32", f"the token ids must be int32 in every batch, got {out.dtype}"
        assert out.device == logits.device, f"the ids must be on the device of logits, got {out.device}"
        assert list(out.shape) == [3], "one token id per row: shape [bs]"


def test_seeded_row_is_one_draw_of_its_own_generator():
    """A sampled row's token is one multinomial draw of filtered_probs with its own generator: the token, and
    the generator moved by exactly that one draw; greedy rows leave theirs untouched (random batches)."""
    g = rng()
    for _ in range(3):
        bs, vocab = g.randint(3, 6), g.randint(15, 40)
        logits = logits_of(g, bs, vocab) * 0.3  # flat rows: the draw is not the argmax
        params = [GREEDY if g.random() < 0.3 else sampled(g) for _ in range(bs)]
        seeds = [g.randrange(1, 99_999) for _ in range(bs)]
        generators = gens(seeds)
        out = Sampler(CPU).sample(logits, params, generators).tolist()
        for i, (p, seed) in enumerate(zip(params, seeds)):
            if p.is_greedy:
                assert out[i] == int(logits[i].argmax()), f"row {i} is greedy: the argmax of its row"
                after = torch.Generator().manual_seed(seed)
            else:
                token, after = one_draw(logits[i], p, seed)
                assert out[i] == token, \
                    f"row {i}: torch.multinomial(filtered_probs(logits[i], params[i]), 1, generator=generators[i])"
            assert probe(generators[i]) == probe(after), \
                f"row {i}'s generator must move by {'no' if p.is_greedy else 'exactly one'} draw"


def test_unseeded_rows_draw_from_the_global_generator_in_row_order():
    """Rows without a generator draw from the global one, one after another in row order (the test seeds it)."""
    g = rng()
    for _ in range(3):
        vocab = g.randint(20, 40)
        logits = logits_of(g, 5, vocab) * 0.2
        params = [SamplingParams(temperature=1.4), sampled(g), GREEDY, SamplingParams(temperature=1.2),
                  SamplingParams(temperature=1.3, top_p=0.95)]
        seeds = [None, g.randrange(1, 99_999), None, None, None]
        start = g.randrange(1, 99_999)
        torch.manual_seed(start)
        got = Sampler(CPU).sample(logits, params, gens(seeds)).tolist()
        torch.manual_seed(start)
        want = [int(torch.multinomial(filtered_probs(logits[i], params[i]), 1)[0]) for i in (0, 3, 4)]
        assert [got[0], got[3], got[4]] == want, \
            "rows without a generator: one draw each from the global generator, in row order"
        assert got[1] == one_draw(logits[1], params[1], seeds[1])[0], "a seeded row draws from its own generator"
        assert got[2] == int(logits[2].argmax()), "a greedy row: its argmax"
    torch.manual_seed(g.randrange(1 << 30))


def run(prompts, seeds):
    with engine() as llm:
        params = [SamplingParams(max_tokens=6, ignore_eos=True),
                  SamplingParams(temperature=0.8, top_k=20, top_p=0.9, max_tokens=6, ignore_eos=True, seed=seeds[0]),
                  SamplingParams(temperature=1.2, top_k=1, max_tokens=6, ignore_eos=True),
                  SamplingParams(temperature=1.1, top_p=0.8, max_tokens=6, ignore_eos=True, seed=seeds[1])]
        return [list(o["token_ids"]) for o in llm.generate(prompts, params)]


def test_engine_mixed_parameters():
    """The tiny model with a greedy, a seeded top-k/top-p, a top_k = 1 and a seeded top-p request: the engine's
    tokens."""
    g = rng()
    prompts = hidden_prompts(4, min_len=3, max_len=10)
    seeds = [g.randrange(1, 99_999), g.randrange(1, 99_999)]
    assert run(prompts, seeds) == expected(run, prompts, seeds), "the tokens differ from the engine's"

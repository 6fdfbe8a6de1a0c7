"""Tests for tp-heads: kv_head_range over many (heads, K/V heads, size, rank), every q head finding its K/V head on
its rank, check_tp_size's accepted and refused sizes and the numbers in its messages; then tiny models with 1, 2
and 4 K/V heads generating with 2 and 4 rank threads (tensors exchanged in memory) against transformers."""

import re

import transformers.models.llama.modeling_llama  # noqa: F401 - the warm judge imports it once, not each judging

from judge.testing import TIE, expected, hidden_prompts, rng
from minisgl.distributed.info import TPInfo
from minisgl.distributed.shard import check_tp_size, kv_head_range
from minisgl.models.config import ModelConfig

BIG = 720720  # divisible by every size from 1 to 16


def config(heads: int = 4, kv: int = 2, inter: int = 240, vocab: int = 720, experts: int = 0) -> ModelConfig:
    return ModelConfig(architecture="LlamaForCausalLM", num_layers=2, hidden_size=16 * heads, num_heads=heads,
                       num_kv_heads=kv, head_dim=16, intermediate_size=inter, vocab_size=vocab, rms_norm_eps=1e-6,
                       rope_theta=10000.0, rope_scaling=None, max_position=512, tie_word_embeddings=False,
                       attention_bias=False, mlp_bias=False, eos_token_ids=(0,), num_experts=experts,
                       num_experts_per_tok=2 if experts else 0)


def refusal(c: ModelConfig, size) -> str | None:
    """The message of the ValueError check_tp_size raised, or None if it accepted the size."""
    try:
        result = check_tp_size(c, size)
    except ValueError as e:
        return str(e)
    assert result is None, "check_tp_size returns None for a size it accepts"
    return None


def names(message: str, n) -> bool:
    """The number n appears in the message as a number of its own (not as part of another one)."""
    return re.search(rf"(?<![\d.]){re.escape(str(n))}(?![\d.])", message) is not None


def check_refused(c: ModelConfig, size: int, number: int, what: str) -> None:
    message = refusal(c, size)
    assert message is not None, f"{what}: tp_size {size} must be refused with a ValueError"
    assert names(message, size), f"{what}: the message must name the size, {size}; it was: {message!r}"
    assert names(message, number), f"{what}: the message must name the model's number, {number}; it was: {message!r}"


def check_accepted(c: ModelConfig, size: int, what: str) -> None:
    message = refusal(c, size)
    assert message is None, f"{what}: tp_size {size} splits this model, but check_tp_size refused: {message}"


def ranges(kv: int, size: int) -> list:
    return [tuple(kv_head_range(kv, TPInfo(r, size))) for r in range(size)]


def rule(kv: int, size: int) -> list:
    """The statement's rule, computed here."""
    if size <= kv:
        return [(r * (kv // size), kv // size) for r in range(size)]
    return [(r // (size // kv), 1) for r in range(size)]


def shapes(r) -> list:
    """(heads, K/V heads, size) a model can be split by: split and replicated K/V heads, groups of 1 to 4."""
    out = []
    for kv in (1, 2, 3, 4, 6, 8):
        for group in (1, 2, r.choice([3, 4])):
            heads = kv * group
            for size in range(1, 17):
                if heads % size == 0 and (kv % size == 0 or size % kv == 0):
                    out.append((heads, kv, size))
    return out


# ------------------------------------------------------------------------------------------- examples

def test_example_kv_heads_split_and_replicated():
    """8 q heads, 2 K/V heads: with 2 ranks each keeps one K/V head; with 8 ranks each K/V head is replicated on
    4 consecutive ranks (rank r keeps head r // 4); 4 K/V heads on 2 ranks: two each."""
    got = ranges(2, 2)
    assert got == [(0, 1), (1, 1)], "2 K/V heads on 2 ranks: (first, count) of each rank"
    got = ranges(2, 8)
    assert got == [(0, 1)] * 4 + [(1, 1)] * 4, "2 K/V heads on 8 ranks: each replicated on 8/2 = 4 ranks"
    got = ranges(4, 2)
    assert got == [(0, 2), (2, 2)], "4 K/V heads on 2 ranks: 2 each"


def test_example_refusals_name_both_numbers():
    """12 q heads, 3 K/V heads: 6 ranks are fine (each K/V head on 2), 4 and 2 are refused naming the size and
    the 3 K/V heads; 5 does not divide the 12 heads."""
    c = config(heads=12, kv=3)
    check_accepted(c, 6, "12 heads, 3 K/V heads")
    check_refused(c, 4, 3, "12 heads, 3 K/V heads (4 is neither a divisor nor a multiple of 3)")
    check_refused(c, 2, 3, "12 heads, 3 K/V heads (2 does not divide 3)")
    check_refused(c, 5, 12, "12 heads (5 does not divide them)")


# ------------------------------------------------------------------------------------------- hidden

def test_kv_head_range_by_the_rule():
    """Every (K/V heads, size) a model can be split by, every rank: split when size <= K/V heads, replicated on
    size/KV consecutive ranks otherwise."""
    r = rng()
    for _heads, kv, size in shapes(r):
        got = ranges(kv, size)
        assert got == rule(kv, size), f"{kv} K/V heads, tp_size {size}: (first, count) of each rank"
    kv = r.choice([2, 3, 5])
    size = kv * r.choice([2, 3, 4])
    got = ranges(kv, size)
    assert got == expected(lambda: ranges(kv, size)), f"{kv} K/V heads, tp_size {size}: (first, count) of each rank"


def test_every_q_head_finds_its_kv_head():
    """For every rank r: each q head of r (global q = r * H/N + j) reads K/V head q // (H/KV), which r keeps, at
    the local position j // (its q heads / count); the ranks' K/V heads cover all of them."""
    r = rng()
    for heads, kv, size in shapes(r):
        hq, seen = heads // size, set()
        for rank in range(size):
            first, count = kv_head_range(kv, TPInfo(rank, size))
            kept = list(range(first, first + count))
            seen.update(kept)
            wrong = []
            for j in range(hq):
                group = (rank * hq + j) // (heads // kv)
                if group not in kept or kept.index(group) != j // max(1, hq // max(1, count)):
                    wrong.append(rank * hq + j)
            assert wrong == [], (f"{heads} heads, {kv} K/V heads, tp_size {size}, rank {rank} keeps K/V heads "
                                 f"{kept}: these q heads of the rank do not find their K/V head there")
        assert sorted(seen) == list(range(kv)), f"{kv} K/V heads, tp_size {size}: every K/V head is on some rank"


def test_counts_add_up():
    """Split: the ranks' counts add up to the K/V heads (KV/size each, no overlap); replicated: one head each."""
    r = rng()
    for _heads, kv, size in shapes(r):
        counts = [n for _, n in ranges(kv, size)]
        want = [kv // size] * size if size <= kv else [1] * size
        assert counts == want, f"{kv} K/V heads, tp_size {size}: the count of each rank"


def test_sizes_that_split_the_model_are_accepted():
    """A size that divides the heads, the MLP and the vocabulary, and divides or is a multiple of the K/V heads,
    is accepted (None); 1 always is."""
    r = rng()
    for heads, kv, size in shapes(r):
        check_accepted(config(heads, kv, inter=BIG, vocab=BIG), size, f"{heads} heads, {kv} K/V heads")
    check_accepted(config(heads=r.choice([5, 7, 9]), kv=1, inter=r.choice([97, 101]), vocab=r.choice([503, 509])),
                   1, "odd shapes, one rank")


def test_heads_not_divided():
    """A size that does not divide the attention heads is refused, naming the size and the heads."""
    r = rng()
    for heads, size in ((4, 3), (12, 8), (6, 4), (r.choice([10, 14]), 4)):
        check_refused(config(heads, kv=heads), size, heads, f"{heads} heads")


def test_intermediate_and_vocabulary_not_divided():
    """A size that divides the heads but not the MLP's intermediate size, or not the vocabulary, is refused, naming
    the size and that number."""
    r = rng()
    inter = r.choice([130, 146, 206])  # even, not a multiple of 4
    check_refused(config(heads=8, kv=4, inter=inter), 4, inter, f"intermediate size {inter}")
    vocab = r.choice([514, 1026, 770])
    check_refused(config(heads=8, kv=4, vocab=vocab), 4, vocab, f"vocabulary size {vocab}")
    inter = 2 * r.choice([61, 67, 71])
    check_refused(config(heads=4, kv=4, inter=inter), 4, inter, f"intermediate size {inter}")


def test_kv_heads_neither_divided_nor_multiple():
    """K/V heads: a size that neither divides them nor is a multiple of them is refused, naming the size and the
    K/V heads."""
    r = rng()
    cases = [(12, 3, 4), (12, 3, 2), (12, 6, 4), (24, 6, 8), (20, 10, 4), (r.choice([24, 48]), 3, 8)]
    for heads, kv, size in cases:
        check_refused(config(heads, kv, inter=BIG, vocab=BIG), size, kv, f"{heads} heads, {kv} K/V heads")


def test_multiples_of_kv_heads_are_accepted():
    """Replication: 1 K/V head on any size dividing the heads, and 2 or 3 K/V heads on a multiple of them."""
    r = rng()
    for heads, kv, size in ((8, 1, 8), (8, 1, 2), (8, 2, 8), (12, 3, 6), (24, 3, 12), (16, 2, r.choice([4, 8, 16]))):
        check_accepted(config(heads, kv, inter=BIG, vocab=BIG), size, f"{heads} heads, {kv} K/V heads")


def test_sizes_that_are_not_positive_ints():
    """0, negatives and a float are refused with a ValueError showing the value given."""
    r = rng()
    c = config()
    for size in (0, -1, -r.randint(2, 9), 2.0, float(r.choice([4, 8]))):
        message = refusal(c, size)
        assert message is not None, f"tp_size {size!r} must be refused with a ValueError"
        assert str(size) in message or repr(size) in message, \
            f"the message must show the value given, {size!r}; it was: {message!r}"


def test_mixture_of_experts():
    """A Mixture-of-Experts model is refused when size > 1, accepted with size 1."""
    r = rng()
    for experts in (1, r.choice([2, 8, 16, 60])):  # num_experts > 0: one expert is a Mixture-of-Experts model too
        c = config(heads=8, kv=4, experts=experts)
        for size in (2, 4):
            message = refusal(c, size)
            assert message is not None, \
                f"an MoE model ({experts} experts) with tp_size {size} must be refused with a ValueError"
        check_accepted(c, 1, f"an MoE model ({experts} experts) on one rank")


# ------------------------------------------------------------------------------------------- end to end

def model(kv: int) -> str:
    """A tiny random Llama (4 q heads) with 1 (its K/V rows cut to head 0), 2 or 4 K/V heads."""
    from minisgl.testing import tiny_model, tiny_model_one_kv_head

    return str({4: lambda: tiny_model("llama", gqa=False), 2: lambda: tiny_model("llama"),
                1: lambda: tiny_model_one_kv_head("llama")}[kv]())


def thread_tokens(kv: int, size: int, prompts, n: int, page_size: int) -> list:
    from minisgl.core import SamplingParams
    from minisgl.distributed.threads import generate_in_rank_threads

    params = [SamplingParams(max_tokens=n, ignore_eos=True) for _ in prompts]
    return generate_in_rank_threads(size, model(kv), [list(p) for p in prompts], params, device="cpu",
                                    page_size=page_size, linear_backend="default", max_seq_len_override=128,
                                    cuda_graph_max_bs=0)


def test_engine_same_tokens_as_transformers():
    """Tiny Llamas with 1, 2 and 4 K/V heads (replicated, split one each, split two each), 2 and 4 rank threads:
    the greedy tokens equal transformers' (a near-tie may go either way)."""
    from minisgl.testing import greedy_differences, hf_greedy_with_margins

    r = rng()
    prompts = hidden_prompts(3, 2, 12, r=r)
    for kv in (1, 2, 4):
        want, margins = hf_greedy_with_margins(model(kv), prompts, 6)
        for size in (2, 4):
            got = thread_tokens(kv, size, prompts, 6, r.choice([1, 2, 4]))
            assert greedy_differences(got, want, margins, TIE) == [], \
                f"{kv} K/V heads, {size} ranks: (prompt, first differing step, your tokens, transformers')"

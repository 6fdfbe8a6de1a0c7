"""Tests for graph-bs-list: make_graph_bs_list, directly and through the engine."""

import random

from judge.testing import PROMPT_IDS, Trace, eager_tokens, engine, generate, gpu, original
from minisgl.engine.graph import make_graph_bs_list

GiB = 1 << 30
EIGHTS_160 = [1, 2, 4] + list(range(8, 161, 8))
EIGHTS_256 = [1, 2, 4] + list(range(8, 257, 8))


def test_example_ceiling_20():
    """cuda_graph_max_bs=20 on a CPU: 1, 2, 4 and the multiples of 8 up to 20."""
    got = make_graph_bs_list(None, 20, False, 0)
    assert got == [1, 2, 4, 8, 16]


def test_example_explicit_list_wins():
    """An explicit list is returned sorted, each size once."""
    got = make_graph_bs_list([4, 1, 2, 2], None, False, 0)
    assert got == [1, 2, 4]


def test_off_on_cpu_by_default():
    """No ceiling and no list on a CPU: graphs are off."""
    got = make_graph_bs_list(None, None, False, 0)
    assert got == []


def test_cuda_default_ceiling_160():
    """On CUDA with 80 GiB free or less, the default ceiling is 160."""
    got = make_graph_bs_list(None, None, True, 40 * GiB)
    assert got == EIGHTS_160
    at_80 = make_graph_bs_list(None, None, True, 80 * GiB)
    assert at_80 == EIGHTS_160, "exactly 80 GiB free is not more than 80 GiB: the ceiling is 160"


def test_cuda_default_ceiling_256():
    """On CUDA with more than 80 GiB free, the default ceiling is 256."""
    got = make_graph_bs_list(None, None, True, 80 * GiB + 1)
    assert got == EIGHTS_256


def test_ceiling_below_one_turns_graphs_off():
    """cuda_graph_max_bs of 0 or less: no graphs, on a CPU and on CUDA."""
    zero = make_graph_bs_list(None, 0, False, 0)
    assert zero == []
    negative = make_graph_bs_list(None, -8, True, 100 * GiB)
    assert negative == []


def test_small_ceilings():
    """Every size is at most the ceiling; a ceiling that is a multiple of 8 is included."""
    for max_bs, want in [(1, [1]), (2, [1, 2]), (3, [1, 2]), (4, [1, 2, 4]), (7, [1, 2, 4]),
                         (8, [1, 2, 4, 8]), (15, [1, 2, 4, 8]), (16, [1, 2, 4, 8, 16]), (17, [1, 2, 4, 8, 16])]:
        got = make_graph_bs_list(None, max_bs, False, 0)
        assert got == want, f"cuda_graph_max_bs={max_bs}"


def test_explicit_list_details():
    """An explicit list wins over a ceiling, is sorted and deduplicated, and drops sizes below 1."""
    got = make_graph_bs_list([8, 3, 3, 1], 64, True, 100 * GiB)
    assert got == [1, 3, 8]
    with_zero = make_graph_bs_list([0, 2, -1], None, False, 0)
    assert with_zero == [2]
    empty = make_graph_bs_list([], None, True, 100 * GiB)
    assert empty == [], "an explicit empty list means no graphs"


def test_random_inputs_match_the_engine():
    """200 random inputs, compared with the engine's own make_graph_bs_list."""
    rng = random.Random(18)
    reference = original("minisgl.engine.graph:make_graph_bs_list")
    for _ in range(200):
        bs = None if rng.random() < 0.5 else [rng.randint(-2, 300) for _ in range(rng.randint(0, 6))]
        max_bs = rng.choice([None, rng.randint(-4, 300)])
        cuda = rng.random() < 0.5
        free = rng.choice([0, 40 * GiB, 80 * GiB, 80 * GiB + 1, 141 * GiB])
        args = (bs, max_bs, cuda, free)
        got = make_graph_bs_list(list(bs) if bs is not None else None, max_bs, cuda, free)
        want = reference(list(bs) if bs is not None else None, max_bs, cuda, free)
        assert got == want, f"make_graph_bs_list{args}"


def test_engine_records_these_sizes():
    """Through the engine: cuda_graph_max_bs=4 records graphs for 1, 2 and 4, every decode step replays,
    and the tokens are those of the run without graphs."""
    want = eager_tokens(PROMPT_IDS[:3], 5)
    with engine(None, max_bs=4) as llm:
        runner = llm.engine.graph_runner
        assert runner.graph_bs_list == [1, 2, 4]
        recorded = sorted(runner.graph_map)
        assert recorded == [1, 2, 4]
        trace = Trace(llm)
        got = generate(llm, PROMPT_IDS[:3], 5)
    replayed = len(trace.replays)
    decode_steps = len(trace.decode_steps)
    assert replayed == decode_steps > 0, "every decode step must replay a graph"
    assert got == want, "the tokens differ from the run without graphs"


@gpu
def test_gpu_default_list_on_this_card():
    """On a real GPU the default list follows the card's free memory."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    got = make_graph_bs_list(None, None, True, free)
    want = EIGHTS_256 if free > 80 * GiB else EIGHTS_160
    assert got == want

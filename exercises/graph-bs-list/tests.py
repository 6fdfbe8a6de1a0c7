"""Tests for graph-bs-list: make_graph_bs_list, directly (fixed and hidden inputs) and through the engine."""

from judge.testing import Trace, eager_tokens, engine, expected, gpu, hidden_prompts, rng
from minisgl.core import SamplingParams
from minisgl.engine.graph import make_graph_bs_list

SPEC = "minisgl.engine.graph:make_graph_bs_list"
GiB = 1 << 30
BIG = 141 * GiB  # a card with more than 80 GiB free
EIGHTS_160 = [1, 2, 4] + list(range(8, 161, 8))
EIGHTS_256 = [1, 2, 4] + list(range(8, 257, 8))


def sizes(value) -> list:
    """The learner's result as plain data: a list of Python ints (never compared through its own __eq__)."""
    is_list = isinstance(value, list)
    assert is_list, f"make_graph_bs_list must return a list, not {type(value).__name__}"
    items = list(value)
    ints = all(type(x) is int for x in items)
    assert ints, f"every size must be a Python int, got {[type(x).__name__ for x in items]}"
    return items


def call(*args) -> list:
    return sizes(make_graph_bs_list(*args))


def not_power_of_two(r, lo: int, hi: int) -> int:
    """A random int in [lo, hi] that is not a power of two."""
    while True:
        n = r.randint(lo, hi)
        if n < 1 or n & (n - 1):
            return n


def sample_sizes(r, k: int, lo: int = 3, hi: int = 90) -> list:
    """k different random sizes in [lo, hi], none a power of two, ascending."""
    return sorted(r.sample([n for n in range(lo, hi + 1) if n & (n - 1)], k))


def rule_four(ceiling: int) -> list:
    """The test's own statement of rule 4 (1, 2, 4 and the multiples of 8, all <= the ceiling)."""
    return [bs for bs in (1, 2, 4) if bs <= ceiling] + list(range(8, ceiling + 1, 8))


def test_example_ceiling_20():
    """cuda_graph_max_bs=20 on a CPU: 1, 2, 4 and the multiples of 8 up to 20; a ceiling of 24 includes 24."""
    got = call(None, 20, False, 0)
    assert got == [1, 2, 4, 8, 16], "a ceiling of 20 gives 1, 2, 4, 8, 16 (ascending, every size <= 20)"
    at_24 = call(None, 24, False, 0)
    assert at_24 == [1, 2, 4, 8, 16, 24], "a ceiling of 24 gives 1, 2, 4, 8, 16, 24 (the ceiling itself included)"


def test_example_explicit_list_wins():
    """An explicit list is returned sorted, each size once, without the sizes below 1."""
    got = call([12, 3, 5, 3, 0], None, False, 0)
    assert got == [3, 5, 12], "an explicit list: its sizes >= 1, sorted ascending, each once"


def test_explicit_list_wins_over_the_rest():
    """An explicit list is used as it is whatever the ceiling (smaller or larger), the device and the memory."""
    r = rng()
    picked = sample_sizes(r, 4, 3, 60)
    ceiling = not_power_of_two(r, 3, picked[1] - 1)  # smaller than most of the explicit sizes
    for args in [(picked, ceiling, True, BIG), (picked, ceiling, False, 0), (picked, None, True, 40 * GiB),
                 (picked, None, False, 0), (picked, 300, True, BIG)]:
        got = call(list(args[0]), *args[1:])
        assert got == picked, f"make_graph_bs_list{args}: an explicit list wins over the ceiling, device and memory"


def test_explicit_list_sorted():
    """The explicit sizes come back ascending, whatever order they were given in."""
    r = rng()
    picked = sample_sizes(r, 5)
    given = list(picked)
    while given == picked:
        r.shuffle(given)
    got = call(list(given), None, True, BIG)
    assert got == picked, f"the explicit list {given} must come back sorted ascending"


def test_explicit_list_each_size_once():
    """A size given twice (or more) is recorded once."""
    r = rng()
    picked = sample_sizes(r, 3)
    given = [picked[2], picked[0], picked[2], picked[1], picked[0], picked[2]]
    got = call(given, None, False, 0)
    assert got == picked, f"the explicit list {given}: each size once"


def test_explicit_list_drops_sizes_below_one():
    """Sizes of 0 or less in an explicit list are ignored."""
    r = rng()
    picked = sample_sizes(r, 3)
    given = [0, picked[1], -r.randint(1, 50), picked[0], 0, picked[2]]
    got = call(given, 20, False, 0)
    assert got == picked, f"the explicit list {given}: sizes below 1 (0 and negatives) are dropped"


def test_explicit_list_keeps_size_one():
    """Size 1 is not below 1: an explicit list keeps it (only 0 and negatives are dropped)."""
    for given, want in (([1], [1]), ([5, 1, 0, 12], [1, 5, 12])):
        got = call(list(given), None, True, BIG)
        assert got == want, f"the explicit list {given}: size 1 is kept (only sizes below 1 are dropped)"
    r = rng()
    picked = sample_sizes(r, 3)
    given = [picked[2], 1, -r.randint(1, 50), picked[0], 1, picked[1]]
    got = call(given, 20, False, 0)
    assert got == [1] + picked, f"the explicit list {given}: size 1 is kept, first"

def test_explicit_list_left_as_it_is():
    """The caller's explicit list is not modified (not sorted, deduplicated or filtered in place): a new list comes back."""
    r = rng()
    picked = sample_sizes(r, 3)
    for given in ([12, 3, 5, 3, 0], [picked[2], 0, picked[0], picked[2], -r.randint(1, 50), picked[1]]):
        before = list(given)
        got = make_graph_bs_list(given, None, True, BIG)
        after = list(given)
        assert after == before, f"cuda_graph_bs={before} was changed to {after}: leave the caller's list as it is"
        same_object = got is given
        assert not same_object, "return a new list, not the caller's cuda_graph_bs itself"


def test_explicit_empty_list_means_no_graphs():
    """An explicit empty list, or one with no size >= 1, means no graphs (it is not 'no list')."""
    for given in ([], [0], [0, -3]):
        got = call(list(given), None, True, BIG)
        assert got == [], f"cuda_graph_bs={given} on CUDA: an explicit list without sizes >= 1 gives [] (not the default)"
        with_ceiling = call(list(given), 20, False, 0)
        assert with_ceiling == [], f"cuda_graph_bs={given} with a ceiling of 20: the explicit list still wins ([])"


def test_off_on_cpu_by_default():
    """No ceiling and no list on a CPU: graphs are off, whatever the memory."""
    for free in (0, rng().randrange(GiB, 80 * GiB), BIG):
        got = call(None, None, False, free)
        assert got == [], f"no list, no ceiling, is_cuda=False (free_memory={free}): graphs are off on a CPU ([])"


def test_cuda_default_ceiling_160():
    """On CUDA with at most 80 GiB free (80 << 30 bytes), the default ceiling is 160."""
    r = rng()
    for free in (r.randrange(GiB, 40 * GiB), 80 * 10**9 + r.randrange(1, 5 * 10**9), 80 * GiB):
        got = call(None, None, True, free)
        assert got == EIGHTS_160, (f"free_memory={free} bytes is not more than 80 GiB (80 << 30 = {80 * GiB}): "
                                   "the ceiling is 160")


def test_cuda_default_ceiling_256():
    """On CUDA with more than 80 GiB free, the default ceiling is 256."""
    r = rng()
    for free in (80 * GiB + 1, 80 * GiB + r.randrange(2, 60 * GiB)):
        got = call(None, None, True, free)
        assert got == EIGHTS_256, f"free_memory={free} bytes is more than 80 GiB: the ceiling is 256"


def test_ceiling_below_one_turns_graphs_off():
    """cuda_graph_max_bs of 0 or less: no graphs, on a CPU and on CUDA (0 is a ceiling, not 'no ceiling')."""
    negative = -rng().randint(1, 300)
    for max_bs in (0, negative):
        for is_cuda, free in ((False, 0), (True, 40 * GiB), (True, BIG)):
            got = call(None, max_bs, is_cuda, free)
            assert got == [], f"cuda_graph_max_bs={max_bs}, is_cuda={is_cuda}: a ceiling below 1 turns graphs off"


def test_small_ceilings():
    """Every size is at most the ceiling; 1, 2 and 4 only where they fit."""
    for max_bs, want in [(1, [1]), (2, [1, 2]), (3, [1, 2]), (4, [1, 2, 4]), (5, [1, 2, 4]), (7, [1, 2, 4])]:
        got = call(None, max_bs, False, 0)
        assert got == want, f"cuda_graph_max_bs={max_bs}: only the sizes <= {max_bs} of 1, 2, 4"


def test_the_ceiling_itself_when_a_multiple_of_eight():
    """A ceiling that is a multiple of 8 is recorded itself."""
    k = rng().choice([3, 5, 6, 7, 9, 11])
    for max_bs in (8, 8 * k):
        got = call(None, max_bs, True, BIG)
        assert got == rule_four(max_bs), f"cuda_graph_max_bs={max_bs}: multiples of 8 up to and including the ceiling"


def test_multiples_of_eight_up_to_the_ceiling():
    """Hidden ceilings: 1, 2, 4 and every multiple of 8 (not only powers of two) up to the ceiling."""
    r = rng()
    for _ in range(6):
        max_bs = not_power_of_two(r, 25, 300)
        got = call(None, max_bs, r.random() < 0.5, BIG)
        assert got == rule_four(max_bs), f"cuda_graph_max_bs={max_bs}: 1, 2, 4, then every multiple of 8 up to it"


def test_ascending():
    """The list is ascending (pad_batch pads to the first recorded size that fits)."""
    max_bs = not_power_of_two(rng(), 17, 90)
    got = call(None, max_bs, False, 0)
    assert got == sorted(got), f"cuda_graph_max_bs={max_bs}: the sizes must be ascending (smallest first)"
    default = call(None, None, True, BIG)
    assert default == sorted(default), "the CUDA default list must be ascending (smallest first)"


def test_hidden_inputs_match_the_engine():
    """200 hidden random inputs, compared with the engine's own make_graph_bs_list."""
    r = rng()
    for _ in range(200):
        bs = None if r.random() < 0.4 else [r.randint(-2, 300) for _ in range(r.randint(0, 6))]
        max_bs = r.choice([None, r.randint(-4, 300), r.randint(-1, 9)])
        cuda = r.random() < 0.5
        free = r.choice([0, 40 * GiB, 83 * 10**9, 80 * GiB, 80 * GiB + 1, BIG])
        args = (bs, max_bs, cuda, free)
        got = call(list(bs) if bs is not None else None, max_bs, cuda, free)
        assert got == expected(SPEC, list(bs) if bs is not None else None, max_bs, cuda, free), \
            f"make_graph_bs_list{args}"


def test_engine_records_these_sizes():
    """Through the engine: cuda_graph_max_bs=3 records graphs for 1 and 2 only. Three requests
    finishing at different times decode as a batch of 3 without a graph (none fits), then replay the graph
    of 2 and of 1; the tokens are those of the run without graphs."""
    prompts = hidden_prompts(3)
    max_tokens = [3, 5, 7]
    want = eager_tokens(prompts, max_tokens)
    with engine(None, max_bs=3) as llm:
        runner = llm.engine.graph_runner
        bs_list = list(runner.graph_bs_list)
        recorded = sorted(runner.graph_map)
        trace = Trace(llm)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [list(o["token_ids"]) for o in out]
    assert bs_list == [1, 2], "cuda_graph_max_bs=3: the engine's graph_bs_list must be [1, 2]"
    assert recorded == [1, 2], "cuda_graph_max_bs=3: graphs must be recorded for 1 and 2 only"
    steps = list(trace.decode_steps)
    assert steps == [(3, 3), (3, 3), (2, 2), (2, 2), (1, 1), (1, 1)], \
        "decode batches (size, padded size): 3 requests are not padded (no graph of 3 or more), then 2, then 1"
    replays = list(trace.replays)
    assert replays == [(2, 2, 2), (2, 2, 2), (1, 1, 1), (1, 1, 1)], \
        "only the batches of 2 and 1 replay a graph (size, padded size, rows of logits)"
    assert got == want, "the tokens differ from the run without graphs"


@gpu
def test_gpu_default_list_on_this_card():
    """On a real GPU the default list follows the card's free memory."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    got = call(None, None, True, int(free))
    want = EIGHTS_256 if free > 80 * GiB else EIGHTS_160
    assert got == want, f"free_memory={free} bytes on this card"


@gpu
def test_gpu_ceiling_zero_records_nothing():
    """On a real GPU, cuda_graph_max_bs=0 records no graph: every decode step runs eagerly."""
    prompts = hidden_prompts(2)
    want = eager_tokens(prompts, 4, device="cuda")
    with engine(None, max_bs=0, device="cuda") as llm:
        bs_list = list(llm.engine.graph_runner.graph_bs_list)
        recorded = len(llm.engine.graph_runner.graph_map)
        trace = Trace(llm)
        out = llm.generate([list(p) for p in prompts], SamplingParams(max_tokens=4, ignore_eos=True))
    got = [list(o["token_ids"]) for o in out]
    assert bs_list == [], "cuda_graph_max_bs=0 on CUDA: graphs are off (graph_bs_list == [])"
    assert recorded == 0, "cuda_graph_max_bs=0 on CUDA: no graph may be recorded"
    replays = len(trace.replays)
    assert replays == 0, "cuda_graph_max_bs=0 on CUDA: no decode step may replay a graph"
    assert got == want, "the tokens differ from the eager run"

"""Tests for graph-capture-buffer: set_batch makes views, copy_from writes into the buffers, every step."""

import torch

from judge.testing import Trace, eager_tokens, engine, gpu, hidden_prompts, rng
from minisgl.core import Batch, Req, SamplingParams, get_global_ctx
from minisgl.engine.graph import GraphCaptureBuffer

FIELDS = ("input_ids", "out_loc", "positions")
MAX_BS, VOCAB = 7, 13  # the buffers: [7] and [7, 13]; the batches below are 3 real requests padded to 5
CPU = torch.device("cpu")


def make_batch(n_real: int, padded: int) -> Batch:
    reqs = [Req(input_ids=[11, 12, 13], table_idx=i, cached_len=2, output_len=5, uid=i) for i in range(n_real)]
    dummy = Req(input_ids=[0], table_idx=6, cached_len=0, output_len=1, uid=-1)
    batch = Batch(reqs=reqs, phase="decode")
    batch.padded_reqs = reqs + [dummy] * (padded - n_real)
    return batch


def draw(r, n: int, lo: int = 3, hi: int = 500) -> list:
    """n different random ints in [lo, hi]: never 0 (the buffers' initial contents) nor a power of two."""
    return r.sample([v for v in range(lo, hi + 1) if v & (v - 1)], n)


def fill(batch: Batch, values: dict) -> Batch:
    for name in FIELDS:
        setattr(batch, name, torch.tensor(values[name], dtype=torch.int32))
    return batch


def hidden_values(r, n: int) -> dict:
    return {name: draw(r, n) for name in FIELDS}


def hidden_shape(r) -> tuple:
    """(real requests, padded size): all different from each other and from MAX_BS (7) and VOCAB (13)."""
    return r.choice([(3, 5), (4, 6), (2, 5), (3, 6)])


def contents(buf, n: int) -> dict:
    """The first n elements of each input buffer, as plain lists."""
    return {name: getattr(buf, name)[:n].tolist() for name in FIELDS}


def test_example_set_batch_makes_views():
    """set_batch points each input field at the start of its own buffer, padded_size elements long."""
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    batch = make_batch(4, 5)
    buf.set_batch(batch)
    for name in FIELDS:
        field, buffer = getattr(batch, name), getattr(buf, name)
        assert field is not None, f"batch.{name} was not set"
        shape = list(field.shape)
        assert shape == [5], f"batch.{name} must have batch.padded_size (5) elements"
        same_memory = field.data_ptr() == buffer.data_ptr()
        assert same_memory, f"batch.{name} must be a view of the start of buf.{name} (a slice), not a copy"


def test_example_copy_from_copies_every_input():
    """copy_from writes the batch's input_ids, out_loc and positions into the first padded_size elements."""
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    values = {"input_ids": [101, 57, 333, 29, 45], "out_loc": [210, 211, 212, 213, 99], "positions": [5, 9, 3, 7, 6]}
    buf.copy_from(fill(make_batch(3, 5), values))
    for name in FIELDS:
        got = getattr(buf, name)[:5].tolist()
        assert got == values[name], f"buf.{name}[:5] must hold batch.{name} after copy_from"


def test_each_field_views_its_own_buffer():
    """input_ids views buf.input_ids, out_loc buf.out_loc, positions buf.positions (none swapped)."""
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    batch = make_batch(*hidden_shape(rng()))
    buf.set_batch(batch)
    for name in FIELDS:
        for other in FIELDS:
            same = getattr(batch, name).data_ptr() == getattr(buf, other).data_ptr()
            if other == name:
                assert same, f"batch.{name} must be a view of buf.{name}"
            else:
                assert not same, f"batch.{name} views buf.{other}: each field must view its own buffer"


def test_views_cover_the_padded_batch():
    """Hidden shapes, e.g. 3 requests padded to 5 on buffers of 7: the views have padded_size elements (not
    batch.size, not the whole buffer)."""
    n_real, n = hidden_shape(rng())
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    batch = make_batch(n_real, n)
    buf.set_batch(batch)
    for name in FIELDS:
        shape = list(getattr(batch, name).shape)
        assert shape == [n], (f"batch.{name} must cover batch.padded_size ({n}) elements: not batch.size "
                              f"({n_real}), not the whole buffer ({MAX_BS})")


def test_views_see_later_writes():
    """Values written into the buffers after set_batch are seen through the batch's fields (what a graph reads)."""
    r = rng()
    n_real, n = hidden_shape(r)
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    batch = make_batch(n_real, n)
    buf.set_batch(batch)
    values = hidden_values(r, MAX_BS)
    for name in FIELDS:
        getattr(buf, name).copy_(torch.tensor(values[name], dtype=torch.int32))
    for name in FIELDS:
        seen = getattr(batch, name).tolist()
        assert seen == values[name][:n], f"batch.{name} must show what is written into buf.{name} later (a view)"


def test_copy_from_writes_in_place():
    """copy_from writes into the existing buffers, never replaces them (the graph keeps their address)."""
    r = rng()
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    before = {name: (getattr(buf, name), getattr(buf, name).data_ptr()) for name in FIELDS}
    values = hidden_values(r, 5)
    buf.copy_from(fill(make_batch(3, 5), values))
    for name in FIELDS:
        tensor, ptr = before[name]
        same_tensor = getattr(buf, name) is tensor and getattr(buf, name).data_ptr() == ptr
        assert same_tensor, f"buf.{name} was replaced by another tensor: write into it (buf.{name}[s] = ...)"
        size = list(getattr(buf, name).shape)
        assert size == [MAX_BS], f"buf.{name} must keep its size of max_bs ({MAX_BS})"
        written = tensor[:5].tolist()
        assert written == values[name], f"the values must arrive in the original buf.{name}"


def test_copy_from_the_padded_rows():
    """3 requests padded to 5: all 5 rows are copied (the dummies' inputs too), and rows 5 and 6 are untouched."""
    r = rng()
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    old = hidden_values(r, MAX_BS)
    for name in FIELDS:
        getattr(buf, name).copy_(torch.tensor(old[name], dtype=torch.int32))
    values = {name: draw(r, 5, 501, 999) for name in FIELDS}
    buf.copy_from(fill(make_batch(3, 5), values))
    for name in FIELDS:
        padded_rows = getattr(buf, name)[3:5].tolist()
        assert padded_rows == values[name][3:], \
            f"buf.{name}[3:5]: the padded rows must be copied too (batch.padded_size = 5, not batch.size = 3)"
        first = getattr(buf, name)[:3].tolist()
        assert first == values[name][:3], f"buf.{name}[:3] must hold the real requests' {name}"
        rest = getattr(buf, name)[5:].tolist()
        assert rest == old[name][5:], f"buf.{name}[5:] is beyond batch.padded_size: copy_from must not touch it"


def test_copy_from_every_step():
    """Three steps in a row (padded to 5, 3, then 6): after each copy the buffers hold that step's inputs."""
    r = rng()
    buf = GraphCaptureBuffer.init(MAX_BS, VOCAB, CPU)
    for step, (n_real, padded) in enumerate([(4, 5), (3, 3), (5, 6)]):
        values = hidden_values(r, padded)
        buf.copy_from(fill(make_batch(n_real, padded), values))
        got = contents(buf, padded)
        assert got == values, f"step {step}: copy_from must copy this step's inputs before every replay"


class Watched:
    """A recorded graph wrapped so that its replay first notes what the fixed buffers hold."""

    def __init__(self, graph, before):
        self.graph, self.before = graph, before

    def replay(self):
        self.before()
        return self.graph.replay()

    def __getattr__(self, name):
        return getattr(self.graph, name)


def watch_replays(llm) -> list:
    """Before every graph replay, record whether the fixed buffers hold the current batch's inputs."""
    runner, seen = llm.engine.graph_runner, []
    buffers = {name: getattr(runner.buffer, name) for name in FIELDS}  # the tensors the graphs recorded

    def before(bs):
        batch = get_global_ctx().batch  # the batch being forwarded (the graph itself only sees buffers)
        n = batch.padded_size
        ok = tuple(buffers[name][:n].tolist() == getattr(batch, name).tolist() for name in FIELDS)
        seen.append((batch.size, n, bs, ok))

    for bs in list(runner.graph_map):
        runner.graph_map[bs] = Watched(runner.graph_map[bs], lambda bs=bs: before(bs))
    return seen


def test_engine_same_tokens_with_graphs():
    """The tiny model with graphs [2, 3, 5] and 4 hidden prompts finishing at different times: before every
    replay the buffers hold that step's input_ids, out_loc and positions, padded rows included; the batches
    are padded 4 -> 5, 3 -> 3, 2 -> 2, 1 -> 2; the tokens equal those of the run without graphs."""
    prompts = hidden_prompts(4)
    max_tokens = [3, 4, 5, 6]
    want = eager_tokens(prompts, max_tokens)
    with engine([2, 3, 5]) as llm:
        seen = watch_replays(llm)
        trace = Trace(llm)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [list(o["token_ids"]) for o in out]
    replayed = [(size, padded, bs) for size, padded, bs, _ in seen]
    assert replayed == [(4, 5, 5), (4, 5, 5), (3, 3, 3), (2, 2, 2), (1, 2, 2)], \
        "each decode step replays the graph of its padded size"
    decode_steps = len(trace.decode_steps)
    assert decode_steps == len(seen), "every decode step must replay a graph"
    for step, (size, padded, _, ok) in enumerate(seen):
        for name, fine in zip(FIELDS, ok):
            assert fine, (f"decode step {step} ({size} requests padded to {padded}): at replay, "
                          f"runner.buffer.{name}[:{padded}] does not hold this step's batch.{name}")
    assert got == want, "the tokens differ from the runs without graphs"


def test_engine_capture_batches_read_the_buffers():
    """Every recorded graph's batch reads its inputs from the runner's one buffer (checked on a CPU, where the
    graphs are EmulatedGraph and keep their batch)."""
    with engine([2, 3, 5]) as llm:
        runner = llm.engine.graph_runner
        for bs, graph in sorted(runner.graph_map.items()):
            batch = getattr(graph, "batch", None)
            if batch is None:
                continue  # a real CUDA graph keeps no Python batch
            for name in FIELDS:
                views = getattr(batch, name).data_ptr() == getattr(runner.buffer, name).data_ptr()
                assert views, f"graph {bs}: its batch.{name} must be a view of runner.buffer.{name}"
                shape = list(getattr(batch, name).shape)
                assert shape == [bs], f"graph {bs}: its batch.{name} must have {bs} elements"


@gpu
def test_gpu_real_capture_same_tokens():
    """A real CUDA graph capture (torch_static backend): before every replay the buffers hold the step's
    inputs, and the tokens are those of the eager run on the GPU."""
    prompts = hidden_prompts(4)
    want = eager_tokens(prompts, 6, device="cuda")
    with engine([2, 3, 5], device="cuda") as llm:
        kinds = sorted({type(g).__name__ for g in llm.engine.graph_runner.graph_map.values()})
        assert kinds == ["CUDAGraph"], "on CUDA the graphs are torch.cuda.CUDAGraph"
        seen = watch_replays(llm)
        out = llm.generate([list(p) for p in prompts], SamplingParams(max_tokens=6, ignore_eos=True))
    got = [list(o["token_ids"]) for o in out]
    replayed = sorted({(size, padded, bs) for size, padded, bs, _ in seen})
    assert replayed == [(4, 5, 5)], "4 requests replay the graph of 5 at every decode step"
    all_ok = all(all(ok) for *_, ok in seen)
    assert all_ok, "at some replay the buffers did not hold that step's inputs"
    assert got == want, "the tokens differ from the run without graphs"

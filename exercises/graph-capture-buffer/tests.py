"""Tests for graph-capture-buffer: set_batch makes views, copy_from writes into the buffers."""

import torch

from judge.testing import PROMPT_IDS, Trace, eager_tokens, engine, generate, gpu, run_with_graphs
from minisgl.core import Batch, Req
from minisgl.engine.graph import GraphCaptureBuffer

FIELDS = ("input_ids", "out_loc", "positions")


def make_batch(n_real: int, padded: int) -> Batch:
    reqs = [Req(input_ids=[1, 2, 3], table_idx=i, cached_len=2, output_len=4, uid=i) for i in range(n_real)]
    dummy = Req(input_ids=[0], table_idx=7, cached_len=0, output_len=1, uid=-1)
    batch = Batch(reqs=reqs, phase="decode")
    batch.padded_reqs = reqs + [dummy] * (padded - n_real)
    return batch


def fill(batch: Batch, input_ids, out_loc, positions) -> Batch:
    batch.input_ids = torch.tensor(input_ids, dtype=torch.int32)
    batch.out_loc = torch.tensor(out_loc, dtype=torch.int32)
    batch.positions = torch.tensor(positions, dtype=torch.int32)
    return batch


def test_example_set_batch_makes_views():
    """set_batch points each input field at the start of its buffer, padded_size elements long."""
    buf = GraphCaptureBuffer.init(8, 16, torch.device("cpu"))
    batch = make_batch(4, 4)
    buf.set_batch(batch)
    for name in FIELDS:
        field, buffer = getattr(batch, name), getattr(buf, name)
        assert field is not None, f"batch.{name} was not set"
        shape = list(field.shape)
        assert shape == [4], f"batch.{name} must have batch.padded_size elements"
        same_memory = field.data_ptr() == buffer.data_ptr()
        assert same_memory, f"batch.{name} must be a view of buf.{name} (a slice), not a copy"


def test_example_copy_from_copies_every_input():
    """copy_from writes the batch's input_ids, out_loc and positions into the buffers."""
    buf = GraphCaptureBuffer.init(8, 16, torch.device("cpu"))
    batch = fill(make_batch(4, 4), [11, 12, 13, 14], [100, 101, 102, 103], [5, 9, 4, 7])
    buf.copy_from(batch)
    for name in FIELDS:
        got, want = getattr(buf, name)[:4], getattr(batch, name)
        assert torch.equal(got, want), f"buf.{name}[:4] must hold batch.{name} after copy_from"


def test_views_cover_the_padded_batch():
    """3 requests padded to 4: the views have 4 elements (the dummy's inputs live in the buffers too)."""
    buf = GraphCaptureBuffer.init(8, 16, torch.device("cpu"))
    batch = make_batch(3, 4)
    buf.set_batch(batch)
    for name in FIELDS:
        shape = list(getattr(batch, name).shape)
        assert shape == [4], f"batch.{name} must cover batch.padded_size (4), not batch.size (3)"


def test_views_see_later_writes():
    """Writing into the buffers later must be visible through the batch's fields (what a graph reads)."""
    buf = GraphCaptureBuffer.init(8, 16, torch.device("cpu"))
    batch = make_batch(2, 2)
    buf.set_batch(batch)
    buf.positions[:2] = torch.tensor([41, 42], dtype=torch.int32)
    buf.input_ids[:2] = torch.tensor([7, 8], dtype=torch.int32)
    buf.out_loc[:2] = torch.tensor([3, 4], dtype=torch.int32)
    positions, input_ids, out_loc = batch.positions.tolist(), batch.input_ids.tolist(), batch.out_loc.tolist()
    assert positions == [41, 42]
    assert input_ids == [7, 8]
    assert out_loc == [3, 4]


def test_copy_from_writes_in_place():
    """copy_from must write into the existing buffers, never replace them (the graph keeps their address)."""
    buf = GraphCaptureBuffer.init(8, 16, torch.device("cpu"))
    before = {name: (getattr(buf, name), getattr(buf, name).data_ptr()) for name in FIELDS}
    buf.copy_from(fill(make_batch(3, 4), [1, 2, 3, 0], [10, 11, 12, 99], [6, 7, 8, 0]))
    for name in FIELDS:
        tensor, ptr = before[name]
        same_tensor = getattr(buf, name) is tensor and getattr(buf, name).data_ptr() == ptr
        assert same_tensor, f"buf.{name} was replaced by another tensor: write into it (buf.{name}[s] = ...)"
        size = getattr(buf, name).shape[0]
        assert size == 8, f"buf.{name} must keep its size of max_bs (8)"


def test_copy_from_every_step():
    """Two steps in a row: after the second copy the buffers hold the second batch, padded rows included."""
    buf = GraphCaptureBuffer.init(8, 16, torch.device("cpu"))
    buf.copy_from(fill(make_batch(4, 4), [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]))
    second = fill(make_batch(3, 4), [21, 22, 23, 0], [31, 32, 33, 255], [41, 42, 43, 0])
    buf.copy_from(second)
    input_ids, out_loc, positions = buf.input_ids[:4].tolist(), buf.out_loc[:4].tolist(), buf.positions[:4].tolist()
    assert input_ids == [21, 22, 23, 0]
    assert out_loc == [31, 32, 33, 255]
    assert positions == [41, 42, 43, 0]


def test_engine_same_tokens_with_graphs():
    """The tiny model with graphs [1, 2, 4]: 3 prompts padded to 4, every decode step replays, and the
    tokens equal those of the run without graphs."""
    got, want, replays, decode_steps = run_with_graphs([1, 2, 4], PROMPT_IDS[:3], 6)
    assert replays == decode_steps > 0, "every decode step must replay a graph"
    assert got == want, "the tokens differ from the run without graphs"


def test_engine_five_prompts_padded_to_eight():
    """5 prompts on graphs [1, 2, 4, 8]: padded to 8, and as requests finish, to smaller graphs."""
    prompts = PROMPT_IDS[:5]
    max_tokens = [3, 5, 7, 4, 6]
    want = [eager_tokens([p], n)[0] for p, n in zip(prompts, max_tokens)]
    from minisgl.core import SamplingParams

    with engine([1, 2, 4, 8]) as llm:
        trace = Trace(llm)
        out = llm.generate(prompts, [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [o["token_ids"] for o in out]
    padded_sizes = sorted({p for _, p, _ in trace.replays})
    assert padded_sizes == [1, 2, 4, 8], "the batch shrinks as requests finish: 8, then 4, 2 and 1"
    assert got == want, "the tokens differ from the runs without graphs"


@gpu
def test_gpu_real_capture_same_tokens():
    """A real CUDA graph capture (torch_static backend): the same tokens as the eager run on the GPU."""
    want = eager_tokens(PROMPT_IDS[:3], 6, device="cuda")
    with engine([1, 2, 4], device="cuda") as llm:
        kinds = {type(g).__name__ for g in llm.engine.graph_runner.graph_map.values()}
        assert kinds == {"CUDAGraph"}
        trace = Trace(llm)
        got = generate(llm, PROMPT_IDS[:3], 6)
    replays, decode_steps = len(trace.replays), len(trace.decode_steps)
    assert replays == decode_steps > 0
    assert got == want, "the tokens differ from the run without graphs"

"""Tests for torch-attn-metadata: the metadata of random batches, the last indices, the tiny model's tokens."""

import torch

from judge.testing import PROMPT_IDS, engine, expected, generate, hidden_prompts, mode, rng
from minisgl.attention.torch_backend import TorchAttnBackend
from minisgl.core import Batch, Req, SamplingParams

CPU = torch.device("cpu")
ROWS, WIDTH = 9, 36


def backend(g=None) -> TorchAttnBackend:
    table = torch.arange(ROWS * WIDTH, dtype=torch.int32).reshape(ROWS, WIDTH) * 7 + 3
    if g is not None:
        flat = table.reshape(-1).tolist()
        g.shuffle(flat)
        table = torch.tensor(flat, dtype=torch.int32).reshape(ROWS, WIDTH)
    return TorchAttnBackend(4, 2, 16, table, CPU)


def request(row: int, cached: int, device: int) -> Req:
    r = Req(input_ids=[9] * device, table_idx=row, cached_len=cached, output_len=4, uid=row)
    r.device_len = device
    return r


def random_batch(g, phase: str, pad: bool | None = None) -> Batch:
    rows = g.sample(range(ROWS - 1), g.randint(2, 6))
    reqs = []
    for row in rows:
        cached = g.randint(0, 20)
        reqs.append(request(row, cached, cached + (1 if phase == "decode" else g.randint(1, 12))))
    batch = Batch(reqs=reqs, phase=phase)
    if (g.random() < 0.5) if pad is None else pad:
        dummy = Req(input_ids=[0], table_idx=ROWS - 1, cached_len=0, output_len=1, uid=-1)
        batch.padded_reqs = reqs + [dummy] * g.randint(1, 3)
    return batch


def meta_of(be: TorchAttnBackend, batch: Batch) -> list:
    be.prepare_metadata(batch)
    m = batch.attn_metadata
    return [m.cu_seqlens_q.tolist(), m.cache_seqlens.tolist(), m.page_table.tolist(), m.max_seqlen_q]


def check(be: TorchAttnBackend, batch: Batch) -> None:
    be.prepare_metadata(batch)
    m = batch.attn_metadata
    assert m is not None, "prepare_metadata must set batch.attn_metadata"
    reqs = batch.padded_reqs
    cu = [0]
    for r in reqs:
        cu.append(cu[-1] + r.extend_len)
    for name in ("cu_seqlens_q", "cache_seqlens", "page_table"):
        dtype = str(getattr(m, name).dtype)
        assert dtype == "torch.int32", f"{name} must be int32, got {dtype}"
    assert m.cu_seqlens_q.tolist() == cu, "cu_seqlens_q: 0, then the running total of extend_len (padded_reqs)"
    assert m.cache_seqlens.tolist() == [r.device_len for r in reqs], "cache_seqlens: device_len of each request"
    width = max(r.device_len for r in reqs)
    assert list(m.page_table.shape) == [len(reqs), width], \
        f"page_table: one row per request ({len(reqs)}), the first max(cache_seqlens) = {width} columns"
    rows = [be.page_table[r.table_idx, :width].tolist() for r in reqs]
    assert m.page_table.tolist() == rows, "page_table row i is the engine's page-table row of request i (table_idx)"
    max_q = m.max_seqlen_q
    assert isinstance(max_q, int) and max_q == max(r.extend_len for r in reqs), \
        "max_seqlen_q: the largest extend_len, as an int"


def test_example_prefill_and_decode():
    """A 5-token prompt with 2 cached, then a decode with 7 cached: the metadata of the statement."""
    be = backend()
    batch = Batch(reqs=[request(3, 2, 5), request(1, 7, 8)], phase="prefill")
    be.prepare_metadata(batch)
    m = batch.attn_metadata
    assert m.cu_seqlens_q.tolist() == [0, 3, 4], "cu_seqlens_q: 0, then the running total of the new tokens"
    assert m.cache_seqlens.tolist() == [5, 8], "cache_seqlens: each request's device_len"
    assert m.max_seqlen_q == 3, "max_seqlen_q: the largest extend_len"
    assert list(m.page_table.shape) == [2, 8], "page_table: 2 rows, 8 columns (the longest request)"
    assert m.page_table[0].tolist() == be.page_table[3, :8].tolist(), "page_table row 0 is the request's table row 3"
    last = m.get_last_indices(2).tolist()
    assert last == [2, 3], "the rows of each request's last new token"


def test_example_checked_fields():
    """A batch through the full check (dtypes, shapes, every value); padded (as for a graph) with one dummy request
    (row 8, one token), which the metadata covers too: batch.padded_reqs."""
    batch = Batch(reqs=[request(0, 0, 6), request(5, 3, 4), request(2, 10, 11)], phase="prefill")
    batch.padded_reqs = batch.reqs + [Req(input_ids=[0], table_idx=ROWS - 1, cached_len=0, output_len=1, uid=-1)]
    check(backend(), batch)


def test_random_prefills():
    """Random prefill batches (prefixes reused, some padded): every field."""
    g = rng()
    for i in range(6):
        check(backend(g), random_batch(g, "prefill", pad=i % 2 == 0))


def test_random_decodes():
    """Random decode batches (one new token each, some padded): every field."""
    g = rng()
    for i in range(6):
        check(backend(g), random_batch(g, "decode", pad=i % 2 == 1))


def test_tensors_on_the_backend_device():
    """A backend on a device other than the CPU (PyTorch's meta device: shapes and dtypes, no values), its page
    table there too: cu_seqlens_q, cache_seqlens and page_table are int32 on self.device, with their shapes. The
    browser's torch has only the CPU: there this test checks nothing."""
    g = rng()
    # the browser's torch has only the CPU: there the same checks run on it (a device mistake shows only locally)
    meta = torch.device("cpu" if mode() == "browser" else "meta")
    fixed = Batch(reqs=[request(3, 2, 5), request(1, 7, 8)], phase="prefill")  # the statement's example first
    for phase, batch in (("prefill", fixed), ("prefill", random_batch(g, "prefill")),
                         ("decode", random_batch(g, "decode", pad=True))):
        be = TorchAttnBackend(4, 2, 16, backend(g).page_table.to(meta), meta)
        reqs = batch.padded_reqs
        try:
            be.prepare_metadata(batch)
        except (RuntimeError, NotImplementedError, TypeError) as e:
            if "write prepare_metadata" in str(e):
                raise
            raise AssertionError(f"with self.device and self.page_table on the meta device (no values) it raised "
                                 f"{type(e).__name__}: {e}; build the tensors on self.device, reading no value of "
                                 "self.page_table on the host") from None
        m = batch.attn_metadata
        assert m is not None, "prepare_metadata must set batch.attn_metadata"
        width = max(r.device_len for r in reqs)
        for name, shape in (("cu_seqlens_q", [len(reqs) + 1]), ("cache_seqlens", [len(reqs)]),
                            ("page_table", [len(reqs), width])):
            got = getattr(m, name)
            assert str(got.device) == str(meta), f"{name} must be on self.device (meta here), got {got.device}"
            assert str(got.dtype) == "torch.int32", f"{name} must be int32, got {got.dtype}"
            assert list(got.shape) == shape, f"{name} must have the shape {shape} in this {phase} batch"
        max_q = m.max_seqlen_q
        assert isinstance(max_q, int) and max_q == max(r.extend_len for r in reqs), \
            "max_seqlen_q: the largest extend_len, as an int"


def test_last_indices():
    """get_last_indices(bs): int64 rows of each request's last new token, for the first bs requests only."""
    g = rng()
    be = backend(g)
    batch = random_batch(g, "prefill")
    be.prepare_metadata(batch)
    cu = [0]
    for r in batch.padded_reqs:
        cu.append(cu[-1] + r.extend_len)
    bs = batch.size
    got = batch.attn_metadata.get_last_indices(bs)
    assert str(got.dtype) == "torch.int64", f"the indices must be int64 (they index the hidden states), got {got.dtype}"
    assert got.tolist() == [c - 1 for c in cu[1 : bs + 1]], "row of the last new token of each of the first bs requests"


def test_last_indices_of_a_padded_batch():
    """get_last_indices(bs) of a padded batch: the rows of the first bs requests' last new tokens only (the dummy
    padding requests after them are left out), int64."""
    g = rng()
    for phase in ("prefill", "decode"):
        be = backend(g)
        batch = random_batch(g, phase, pad=True)
        be.prepare_metadata(batch)
        cu = [0]
        for r in batch.padded_reqs:
            cu.append(cu[-1] + r.extend_len)
        bs = batch.size
        assert bs < len(batch.padded_reqs), "the test's batch is padded"
        got = batch.attn_metadata.get_last_indices(bs)
        assert str(got.dtype) == "torch.int64", f"the indices must be int64, got {got.dtype}"
        assert got.tolist() == [c - 1 for c in cu[1 : bs + 1]], \
            f"a padded {phase} batch: the rows of the last new token of the first bs = {bs} requests only"


def offsets(batch: Batch) -> list:
    cu = [0]
    for r in batch.padded_reqs:
        cu.append(cu[-1] + r.extend_len)
    return cu


def last_rows(batch: Batch, bs: int) -> list:
    return [c - 1 for c in offsets(batch)[1 : bs + 1]]


def test_last_indices_for_several_bs():
    """get_last_indices called again on the same metadata with another bs (the batch's size, 1, the padded size,
    the size again): each call answers for its own bs, nothing is kept from an earlier call."""
    g = rng()
    be = backend(g)
    batch = random_batch(g, "prefill", pad=True)
    be.prepare_metadata(batch)
    m = batch.attn_metadata
    calls = []
    for bs in (batch.size, 1, len(batch.padded_reqs), batch.size):
        calls.append(bs)
        got = m.get_last_indices(bs).tolist()
        assert got == last_rows(batch, bs), \
            f"get_last_indices({bs}) after the calls {calls[:-1]}: the rows of the first {bs} requests' last tokens"


def test_last_indices_leave_the_metadata_unchanged():
    """get_last_indices reads the metadata without changing it: cu_seqlens_q is the same after a call, and calling
    it twice gives the same rows."""
    g = rng()
    for phase in ("prefill", "decode"):
        be = backend(g)
        batch = random_batch(g, phase, pad=True)
        be.prepare_metadata(batch)
        m = batch.attn_metadata
        for call in ("first", "second"):
            got = m.get_last_indices(batch.size).tolist()
            assert got == last_rows(batch, batch.size), f"the {call} call of get_last_indices({batch.size})"
            assert m.cu_seqlens_q.tolist() == offsets(batch), \
                f"after the {call} call of get_last_indices, cu_seqlens_q changed: leave the metadata as it is"


def test_like_the_engine():
    """Random batches: the metadata equals the engine's."""
    g = rng()
    for phase in ("prefill", "decode"):
        be, batch = backend(g), random_batch(g, phase)
        got = meta_of(be, batch)
        assert got == expected(meta_of, be, batch), f"a {phase} batch's metadata differs from the engine's"


def run(prompts, graphs, max_tokens):
    with engine(graphs) as llm:
        params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens]
        first = [list(o["token_ids"]) for o in llm.generate(prompts, params)]
        second = generate(llm, prompts, 3)  # the prompts again: prefixes reused
    return [first, second]


def test_engine_tokens():
    """The tiny model with graphs [1, 2, 4] (5 prompts of different lengths and max_tokens, so batches shrink and
    are padded): the tokens equal the engine's."""
    g = rng()
    prompts = hidden_prompts(5, min_len=3, max_len=13)
    max_tokens = [g.randint(2, 7) for _ in prompts]
    got = run(prompts, [1, 2, 4], max_tokens)
    assert got == expected(run, prompts, [1, 2, 4], max_tokens), "the tokens differ from the engine's"


def test_engine_eager_fixed_prompts():
    """The fixed prompts without graphs: the tokens equal the engine's."""
    got = run(PROMPT_IDS, None, [4] * len(PROMPT_IDS))
    assert got == expected(run, PROMPT_IDS, None, [4] * len(PROMPT_IDS)), "the tokens differ from the engine's"

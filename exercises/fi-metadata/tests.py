"""Tests for fi-metadata: FlashInferBackend._host_metadata on hand-made page tables, then on every batch of the
tiny model (graphs with dummy padding, prefix cache, pages of 3), all on a CPU."""

import torch

from judge.testing import PROMPT_IDS, engine, expected, gpu, hidden_prompts, rng
from minisgl.attention.fi import FlashInferBackend
from minisgl.core import Batch, Req, SamplingParams


def backend(page_table: torch.Tensor, p: int) -> FlashInferBackend:
    """The backend's metadata half, without flashinfer (its __init__ needs a GPU)."""
    fb = FlashInferBackend.__new__(FlashInferBackend)
    fb.page_table, fb.page_size, fb.device = page_table, p, torch.device("cpu")
    return fb


def plain(meta) -> dict:
    return {name: (str(t.dtype), t.tolist()) for name, t in
            (("kv_indptr", meta.kv_indptr), ("kv_indices", meta.kv_indices),
             ("kv_last_page_len", meta.kv_last_page_len), ("cu_seqlens_q", meta.cu_seqlens_q))}


def table(rows: int, width: int, p: int, r, dummy_page: int):
    """A page table whose rows use shuffled, distinct pages; the last row is the dummy's (every slot on its page)."""
    pt = torch.zeros(rows + 1, width, dtype=torch.int32)
    n = width // p
    pages = list(range(rows * n))
    r.shuffle(pages)
    for row in range(rows):
        for k in range(n):
            q = pages[row * n + k]
            pt[row, k * p:(k + 1) * p] = torch.arange(q * p, q * p + p, dtype=torch.int32)
    pt[rows] = dummy_page * p
    return pt


def page_ids(pt: torch.Tensor, row: int, n_tokens: int, p: int) -> list:
    return [int(pt[row, k * p]) // p for k in range(-(-n_tokens // p))]


def req(row: int, cached: int, device: int) -> Req:
    r = Req(input_ids=[1] * max(device, 1), table_idx=row, cached_len=cached, output_len=2, uid=row)
    r.device_len = device
    return r


def want_for(pt, p, reqs) -> dict:
    """The metadata by the rules (computed here)."""
    indptr, indices, last, cu = [0], [], [], [0]
    for q in reqs:
        ids = page_ids(pt, q.table_idx, q.device_len, p)
        indices += ids
        indptr.append(indptr[-1] + len(ids))
        last.append((q.device_len - 1) % p + 1)
        cu.append(cu[-1] + q.device_len - q.cached_len)
    i32 = "torch.int32"
    return {"kv_indptr": (i32, indptr), "kv_indices": (i32, indices), "kv_last_page_len": (i32, last),
            "cu_seqlens_q": (i32, cu)}


# ------------------------------------------------------------------------------------------- examples

def test_example_decode_batch():
    """Page size 3, a decode batch of lengths 7, 9 and 1 (one new token each): pages 3, 3 and 1."""
    pt = torch.zeros(4, 12, dtype=torch.int32)
    for row, pages in enumerate([[5, 2, 8], [0, 7, 3], [6]]):
        for k, q in enumerate(pages):
            pt[row, 3 * k:3 * k + 3] = torch.arange(3 * q, 3 * q + 3, dtype=torch.int32)
    batch = Batch(reqs=[req(0, 6, 7), req(1, 8, 9), req(2, 0, 1)], phase="decode")
    got = plain(backend(pt, 3)._host_metadata(batch))
    assert got["kv_indptr"] == ("torch.int32", [0, 3, 6, 7]), "kv_indptr: running count of pages (3, 3, 1)"
    assert got["kv_indices"] == ("torch.int32", [5, 2, 8, 0, 7, 3, 6]), "kv_indices: page ids, request after request"
    assert got["kv_last_page_len"] == ("torch.int32", [1, 3, 1]), "positions in the last page: 7 -> 1, 9 -> 3, 1 -> 1"
    assert got["cu_seqlens_q"] == ("torch.int32", [0, 1, 2, 3]), "cu_seqlens_q: one new token per request"


def test_example_prefill_with_cached_prefix():
    """Page size 1: a prefill of 5 tokens after 4 cached ones attends to 9 pages but computes 5 queries."""
    pt = torch.zeros(2, 10, dtype=torch.int32)
    pt[0, :9] = torch.tensor([14, 3, 9, 1, 12, 7, 0, 5, 11], dtype=torch.int32)
    batch = Batch(reqs=[req(0, 4, 9)], phase="prefill")
    got = plain(backend(pt, 1)._host_metadata(batch))
    want = {"kv_indptr": ("torch.int32", [0, 9]), "kv_indices": ("torch.int32", [14, 3, 9, 1, 12, 7, 0, 5, 11]),
            "kv_last_page_len": ("torch.int32", [1]), "cu_seqlens_q": ("torch.int32", [0, 5])}
    assert got == want, "all 9 positions' pages are attended to; the queries are the 5 new tokens"


def test_example_dummy_padding():
    """Page size 3: a decode at length 5 (pages 4 and 1) padded with one dummy request (row 2, the dummy page 9):
    the metadata covers batch.padded_reqs, the dummy last."""
    pt = torch.zeros(3, 6, dtype=torch.int32)
    pt[0] = torch.tensor([12, 13, 14, 3, 4, 5], dtype=torch.int32)
    pt[2] = 27  # the dummy's row: every slot on the dummy page
    batch = Batch(reqs=[req(0, 4, 5)], phase="decode")
    batch.padded_reqs = batch.reqs + [Req(input_ids=[0], table_idx=2, cached_len=0, output_len=1, uid=-1)]
    got = plain(backend(pt, 3)._host_metadata(batch))
    want = {"kv_indptr": ("torch.int32", [0, 2, 3]), "kv_indices": ("torch.int32", [4, 1, 9]),
            "kv_last_page_len": ("torch.int32", [2, 1]), "cu_seqlens_q": ("torch.int32", [0, 1, 2])}
    assert got == want, "over batch.padded_reqs: the real request, then the dummy (its one token on page 9)"


# ------------------------------------------------------------------------------------------- hidden

def test_random_batches():
    """Page size 1, then 3 or 5; random lengths and cached prefixes on shuffled pages (the slots past a request's
    tokens hold other numbers): every field by the rules."""
    r = rng()
    for p in (1, r.choice([3, 5])):
        rows, width = 5, 30
        pt = table(rows, width, p, r, dummy_page=97)
        reqs = []
        for row in r.sample(range(rows), 4):
            device = r.randint(1, width)
            reqs.append(req(row, r.randint(0, device - 1), device))
            pt[row, device:] = r.randrange(1 << 20)  # slots past the request's tokens hold nothing of it
        batch = Batch(reqs=reqs, phase="prefill")
        got = plain(backend(pt, p)._host_metadata(batch))
        assert got == want_for(pt, p, reqs), f"page size {p}, lengths {[q.device_len for q in reqs]}"


def test_full_last_page():
    """Lengths that fill their last page exactly: kv_last_page_len is page_size, never 0."""
    r = rng()
    p = r.choice([3, 5])
    pt = table(3, 30, p, r, dummy_page=50)
    reqs = [req(0, 0, 2 * p), req(1, 3 * p - 1, 3 * p), req(2, p, 4 * p)]
    got = plain(backend(pt, p)._host_metadata(Batch(reqs=reqs, phase="prefill")))
    assert got["kv_last_page_len"] == ("torch.int32", [p, p, p]), f"full last pages hold page_size ({p}) tokens"
    assert got["kv_indptr"] == ("torch.int32", [0, 2, 5, 9]), "2, 3 and 4 pages"


def test_dummy_padding_included():
    """A decode batch of 3 padded to 4 with the dummy request: the metadata has 4 requests, the dummy's page last."""
    r = rng()
    p = 3
    pt = table(4, 24, p, r, dummy_page=41)
    reqs = [req(row, n - 1, n) for row, n in zip((0, 2, 3), r.sample(range(2, 24), 3))]
    dummy = Req(input_ids=[0], table_idx=4, cached_len=0, output_len=1, uid=-1)
    batch = Batch(reqs=reqs, phase="decode")
    batch.padded_reqs = reqs + [dummy]
    got = plain(backend(pt, p)._host_metadata(batch))
    assert got == want_for(pt, p, reqs + [dummy]), "over batch.padded_reqs (the dummy too): 4 requests"
    dummy_page = got["kv_indices"][1][-1:]
    assert dummy_page == [41], "the dummy request reads the dummy page"


def test_in_batch_order():
    """The metadata follows batch.padded_reqs in order, not the page-table rows: rows 3, 0, 2 (pages of 2)."""
    p = 2
    pt = torch.zeros(4, 6, dtype=torch.int32)
    for row, pages in {0: [7, 1], 2: [4], 3: [9, 2, 5]}.items():
        for k, q in enumerate(pages):
            pt[row, p * k:p * k + p] = torch.arange(p * q, p * q + p, dtype=torch.int32)
    reqs = [req(3, 4, 6), req(0, 1, 3), req(2, 1, 2)]
    got = plain(backend(pt, p)._host_metadata(Batch(reqs=reqs, phase="prefill")))
    want = {"kv_indptr": ("torch.int32", [0, 3, 5, 6]), "kv_indices": ("torch.int32", [9, 2, 5, 7, 1, 4]),
            "kv_last_page_len": ("torch.int32", [2, 1, 2]), "cu_seqlens_q": ("torch.int32", [0, 2, 4, 5])}
    assert got == want, "request after request in the batch's order (rows 3, 0, 2), not sorted by row"


def test_leading_zero():
    """kv_indptr and cu_seqlens_q have bs + 1 elements, the first 0 (a single request: [0, pages], [0, queries])."""
    r = rng()
    p = r.choice([1, 3, 5])
    pt = table(3, 30, p, r, dummy_page=77)
    n = r.randint(2, 30)
    got = plain(backend(pt, p)._host_metadata(Batch(reqs=[req(1, n - 1, n)], phase="decode")))
    indptr = got["kv_indptr"][1]
    assert indptr == [0, -(-n // p)], f"one request of {n} positions, pages of {p}: kv_indptr must be [0, pages]"
    cu = got["cu_seqlens_q"][1]
    assert cu == [0, 1], "one request with one new token: cu_seqlens_q must be [0, 1]"


def test_int32_everywhere():
    """Every tensor is int32 (FlashInfer's index type), even with ids that would fit anything."""
    pt = torch.zeros(2, 8, dtype=torch.int32)
    pt[0, :6] = torch.arange(30, 36, dtype=torch.int32)
    got = plain(backend(pt, 2)._host_metadata(Batch(reqs=[req(0, 3, 6)], phase="prefill")))
    dtypes = {k: v[0] for k, v in got.items()}
    assert dtypes == dict.fromkeys(got, "torch.int32"), "dtype of each field"
    assert got["kv_indices"][1] == [15, 16, 17], "slots 30..35 are pages 15, 16 and 17 (slot // page_size)"



def test_large_page_ids_exact():
    """A large pool (slot ids above 2**24, where float32 cannot hold every integer): page ids are exact integers,
    slot // page_size, never a float division rounded back."""
    pt = torch.zeros(3, 6, dtype=torch.int32)
    pt[0, :2] = torch.tensor([16_777_217, 16_777_218], dtype=torch.int32)  # page size 1: pages 16777217, 16777218
    pt[1, :3] = torch.arange(3 * 5_592_407, 3 * 5_592_407 + 3, dtype=torch.int32)  # page size 3: page 5592407
    for p, row, n, want in [(1, 0, 2, [16_777_217, 16_777_218]), (3, 1, 2, [5_592_407])]:
        got = plain(backend(pt, p)._host_metadata(Batch(reqs=[req(row, n - 1, n)], phase="decode")))
        assert got["kv_indices"] == ("torch.int32", want), \
            f"page size {p}: slots {pt[row, :n].tolist()} are pages {want} (integer slot // page_size)"
    r = rng()
    p = r.choice([3, 5, 7])
    n_pages = 4
    pages = r.sample(range((1 << 24) // p + 1, (1 << 31) // p - 1), n_pages)
    pt = torch.zeros(2, n_pages * p, dtype=torch.int32)
    for k, q in enumerate(pages):
        pt[0, k * p:(k + 1) * p] = torch.arange(q * p, q * p + p, dtype=torch.int32)
    n = (n_pages - 1) * p + r.randint(1, p)
    reqs = [req(0, n - 1, n)]
    got = plain(backend(pt, p)._host_metadata(Batch(reqs=reqs, phase="decode")))
    assert got == want_for(pt, p, reqs), f"page size {p}, pages {pages}: exact page ids in a large pool"


def engine_metadata(prompts, max_tokens, p):
    """The FlashInfer metadata of every batch the tiny model runs (graphs [1, 2, 4], pages of p tokens)."""
    seen = []
    with engine([1, 2, 4], page_size=p) as llm:
        eng = llm.engine
        fb = backend(eng.page_table, p)
        prepare = eng.attn_backend.prepare_metadata

        def traced(batch):
            seen.append((batch.phase, plain(fb._host_metadata(batch))))
            return prepare(batch)

        eng.attn_backend.prepare_metadata = traced
        llm.generate([list(q) for q in prompts], [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    return seen


def test_engine_batches():
    """Every batch of a generation (prefills with cached prefixes, decodes padded to graph sizes), pages of 3:
    the same metadata as the engine's code gives."""
    r = rng()
    shared = PROMPT_IDS[3]
    prompts = [shared, shared[:7] + [9, 8], hidden_prompts(1, 4, 11, r=r)[0]]
    max_tokens = [r.randint(3, 8) for _ in prompts]
    got = engine_metadata(prompts, max_tokens, 3)
    want = expected(engine_metadata, prompts, max_tokens, 3)
    assert got == want, "(phase, metadata) of each batch of the tiny model"


@gpu(reason="needs a CUDA GPU (self.device and the CPU must differ)")
def test_gpu_devices():
    """On a CUDA machine (page table on the GPU): cu_seqlens_q on self.device, the three KV tensors on the CPU
    (where plan() reads them), with the same values."""
    r = rng()
    p = r.choice([3, 5])
    pt = table(3, 30, p, r, dummy_page=61)
    reqs = [req(row, r.randint(0, n - 1), n) for row, n in zip((2, 0), r.sample(range(2, 30), 2))]
    fb = backend(pt.to("cuda"), p)
    fb.device = torch.device("cuda")
    meta = fb._host_metadata(Batch(reqs=reqs, phase="prefill"))
    cu_device = meta.cu_seqlens_q.device.type
    assert cu_device == "cuda", "cu_seqlens_q must be on self.device (the GPU here)"
    kv_devices = [t.device.type for t in (meta.kv_indptr, meta.kv_indices, meta.kv_last_page_len)]
    assert kv_devices == ["cpu", "cpu", "cpu"], "kv_indptr, kv_indices and kv_last_page_len stay on the CPU"
    got = plain(meta)  # .tolist() reads the GPU tensor too
    assert got == want_for(pt, p, reqs), f"page size {p}, lengths {[q.device_len for q in reqs]}"

"""Tests for fa-metadata: fa_metadata on hand-made page tables (page sizes 1, 4 and 16, prefix hits, chunked
prefill, decode batches padded with the dummy request, pages out of order, large page ids, the meta device), then
the tiny model served by the FlashAttention backend on a CPU, FlashAttention-3's kernel emulated in torch, against
transformers' greedy tokens."""

import contextlib

import torch
import transformers.models.qwen3.modeling_qwen3  # noqa: F401 - the warm judge imports it once, not each judging

from judge.testing import PROMPT_IDS, Trace, draw_engine, eager_tokens, engine, hidden_prompts, rng
from minisgl.attention import ATTENTION_BACKENDS
from minisgl.attention.fa import fa_metadata
from minisgl.attention.utils import attend
from minisgl.core import Req, SamplingParams

I32 = "torch.int32"


# ------------------------------------------------------------------------------------------- helpers

def req(row: int, cached: int, device: int, uid: int = 0, prompt: int | None = None) -> Req:
    """A request in page-table row ``row`` that computes positions [cached, device) (its prompt is ``prompt``
    tokens long: longer than ``device`` in the middle of a chunked prefill)."""
    r = Req(input_ids=[7] * (prompt or max(device, 1)), table_idx=row, cached_len=0, output_len=4, uid=uid)
    r.cached_len, r.device_len = cached, device
    return r


def dummy(row: int) -> Req:
    """The dummy request that pads a decode batch to a graph's size: one token, nothing cached."""
    return Req(input_ids=[0], table_idx=row, cached_len=0, output_len=1, uid=-1)


def table(rows: int, width: int, p: int, r, dummy_page: int, first_page: int = 1) -> torch.Tensor:
    """A page table (int32) whose rows use shuffled, distinct pages (ids from first_page on); the last row is the
    dummy's (every slot on the dummy page)."""
    pt = torch.zeros(rows + 1, width, dtype=torch.int32)
    n = width // p
    pages = list(range(first_page, first_page + rows * n))
    r.shuffle(pages)
    for row in range(rows):
        for k in range(n):
            q = pages[row * n + k]
            pt[row, k * p:(k + 1) * p] = torch.arange(q * p, q * p + p, dtype=torch.int32)
    pt[rows] = dummy_page * p
    return pt


def fill(pt: torch.Tensor, row: int, pages: list, p: int) -> None:
    for k, q in enumerate(pages):
        pt[row, k * p:(k + 1) * p] = torch.arange(q * p, q * p + p, dtype=torch.int32)


def n_pages(n: int, p: int) -> int:
    return -(-n // p)


def plain(meta, reqs, p: int) -> dict:
    """The metadata as plain data: each request's pages (the first ceil(device_len / p) of its row: the kernel
    reads no further), the page table's shape, the lengths, offsets and max_seqlen_q, with the dtypes."""
    pt = meta.page_table
    pages = [pt[i, :n_pages(q.device_len, p)].tolist() for i, q in enumerate(reqs)]
    return {"page_table": (str(pt.dtype), pages), "shape": list(pt.shape),
            "cache_seqlens": (str(meta.cache_seqlens.dtype), meta.cache_seqlens.tolist()),
            "cu_seqlens_q": (str(meta.cu_seqlens_q.dtype), meta.cu_seqlens_q.tolist()),
            "max_seqlen_q": (type(meta.max_seqlen_q).__name__, meta.max_seqlen_q)}


def want_for(pt: torch.Tensor, p: int, reqs) -> dict:
    """The metadata by the rules (computed here, one request at a time)."""
    pages = [[int(pt[q.table_idx, k * p]) // p for k in range(n_pages(q.device_len, p))] for q in reqs]
    cu = [0]
    for q in reqs:
        cu.append(cu[-1] + q.device_len - q.cached_len)
    return {"page_table": (I32, pages), "shape": [len(reqs), max(len(x) for x in pages)],
            "cache_seqlens": (I32, [q.device_len for q in reqs]), "cu_seqlens_q": (I32, cu),
            "max_seqlen_q": ("int", max(q.device_len - q.cached_len for q in reqs))}


def run(pt, p, reqs) -> dict:
    return plain(fa_metadata(reqs, pt, p), reqs, p)


# ------------------------------------------------------------------------------------------- examples

def test_example_prefix_hit_pages_of_4():
    """Page size 4: a request of 10 tokens whose first 6 are cached (pages 2, 5, 1: not in order) and a new
    request of 3 tokens in row 2 (page 3)."""
    pt = torch.zeros(4, 16, dtype=torch.int32)
    pt[0, :10] = torch.tensor([8, 9, 10, 11, 20, 21, 22, 23, 4, 5], dtype=torch.int32)
    pt[2, :3] = torch.tensor([12, 13, 14], dtype=torch.int32)
    reqs = [req(0, 6, 10), req(2, 0, 3, uid=1)]
    got = run(pt, 4, reqs)
    assert got["page_table"] == (I32, [[2, 5, 1], [3]]), \
        "page ids (a page's first slot // 4), read every 4 slots of each request's row, in order"
    assert got["shape"] == [2, 3], "page_table is [bs, the most pages of any request]: 10 tokens -> 3 pages"
    assert got["cache_seqlens"] == (I32, [10, 3]), "cache_seqlens: each request's tokens after this step"
    assert got["cu_seqlens_q"] == (I32, [0, 4, 7]), "cu_seqlens_q: 4 new tokens (10 - 6 cached), then 3"
    assert got["max_seqlen_q"] == ("int", 4), "max_seqlen_q: the most new tokens of one request (an int)"


def test_example_decode_padded_pages_of_16():
    """Page size 16: a decode batch of two requests (lengths 17 and 5) padded with the dummy request (row 3,
    every slot on the dummy page 9)."""
    pt = torch.zeros(4, 32, dtype=torch.int32)
    fill(pt, 1, [6, 2], 16)
    fill(pt, 0, [4], 16)
    pt[3] = 9 * 16
    reqs = [req(1, 16, 17), req(0, 4, 5, uid=1), dummy(3)]
    got = run(pt, 16, reqs)
    want = {"page_table": (I32, [[6, 2], [4], [9]]), "shape": [3, 2], "cache_seqlens": (I32, [17, 5, 1]),
            "cu_seqlens_q": (I32, [0, 1, 2, 3]), "max_seqlen_q": ("int", 1)}
    assert got == want, "one new token each, the dummy request too (one token on page 9)"


# ------------------------------------------------------------------------------------------- hidden: unit

def test_page_sizes_1_4_16():
    """Random batches on shuffled pages with page sizes 1, 4 and 16 (lengths, cached prefixes and rows drawn):
    every field by the rules."""
    r = rng()
    for p in (1, 4, 16):
        rows, width = 5, 6 * p + 16
        width -= width % p
        pt = table(rows, width, p, r, dummy_page=r.randint(90, 120))
        reqs = []
        for uid, row in enumerate(r.sample(range(rows), 4)):
            device = r.randint(1, width)
            reqs.append(req(row, r.randint(0, device - 1), device, uid=uid))
        got = run(pt, p, reqs)
        assert got == want_for(pt, p, reqs), \
            f"page size {p}, (row, cached_len, device_len) {[(q.table_idx, q.cached_len, q.device_len) for q in reqs]}"


def test_prefix_hits():
    """Requests whose prompt is partly cached (cached_len > 0): the queries are the new tokens only, the cache
    lengths and the pages cover every token."""
    r = rng()
    p = r.choice([4, 16])
    pt = table(4, 4 * p, p, r, dummy_page=77)
    reqs = []
    for uid, row in enumerate((2, 0, 3)):
        device = r.randint(p + 2, 4 * p)
        reqs.append(req(row, r.randint(1, device - 2), device, uid=uid))
    got = run(pt, p, reqs)
    want = want_for(pt, p, reqs)
    assert got["cu_seqlens_q"] == want["cu_seqlens_q"], \
        f"cu_seqlens_q: running sum of device_len - cached_len ({[(q.cached_len, q.device_len) for q in reqs]})"
    assert got["cache_seqlens"] == want["cache_seqlens"], "cache_seqlens: device_len, the cached tokens included"
    assert got["max_seqlen_q"] == want["max_seqlen_q"], "max_seqlen_q: the most new tokens of one request"
    assert got["page_table"] == want["page_table"], "the pages of every token, the cached ones included"


def test_chunked_prefill():
    """A prompt prefilled in chunks: the second chunk (cached_len = the first chunk, device_len short of the
    prompt) beside a whole short prompt; pages of 4."""
    r = rng()
    p = 4
    pt = table(3, 24, p, r, dummy_page=55)
    chunk = r.randint(5, 7)
    reqs = [req(1, chunk, 2 * chunk, prompt=2 * chunk + r.randint(2, 5)), req(0, 0, r.randint(2, 4), uid=1)]
    got = run(pt, p, reqs)
    assert got == want_for(pt, p, reqs), \
        f"chunk {chunk}: request 0 computes positions [{chunk}, {2 * chunk}) of a longer prompt; lengths are " \
        "device_len, not the prompt's"


def test_decode_batch():
    """A decode batch (one new token each, cached_len = device_len - 1): cu_seqlens_q is 0, 1, ..., bs,
    max_seqlen_q 1, cache_seqlens device_len, pages of 1, 4 or 16."""
    r = rng()
    p = r.choice([1, 4, 16])
    pt = table(6, 3 * 16, p, r, dummy_page=150)
    reqs = [req(row, n - 1, n, uid=row) for row, n in zip(r.sample(range(6), 5), r.sample(range(2, 48), 5))]
    got = run(pt, p, reqs)
    assert got["cu_seqlens_q"] == (I32, [0, 1, 2, 3, 4, 5]), "decode: one query per request"
    assert got["max_seqlen_q"] == ("int", 1), "decode: max_seqlen_q is 1"
    assert got == want_for(pt, p, reqs), f"page size {p}, lengths {[q.device_len for q in reqs]}"


def test_dummy_padding():
    """A decode batch of 3 padded to 5 with the dummy request (its row: every slot on the dummy page): the
    dummies are requests like the others (one token, one page, one query)."""
    r = rng()
    p = r.choice([4, 16])
    pt = table(4, 2 * 16, p, r, dummy_page=61)
    reqs = [req(row, n - 1, n, uid=row) for row, n in zip((0, 2, 3), r.sample(range(2, 32), 3))]
    padded = reqs + [dummy(4), dummy(4)]
    got = run(pt, p, padded)
    assert got == want_for(pt, p, padded), "every request of the list, the dummies too: 5 rows"
    assert got["page_table"][1][3:] == [[61], [61]], "each dummy reads the dummy page"


def test_rows_are_table_idx():
    """Requests in rows 3, 0, 2 (not 0, 1, 2): each request's pages come from its own row, table_idx, and the
    metadata follows the list's order."""
    p = 4
    pt = torch.zeros(4, 12, dtype=torch.int32)
    for row, pages in {0: [7, 1], 1: [11, 12, 13], 2: [4], 3: [9, 2, 5]}.items():
        fill(pt, row, pages, p)
    reqs = [req(3, 8, 11), req(0, 2, 6, uid=1), req(2, 0, 3, uid=2)]
    got = run(pt, p, reqs)
    assert got["page_table"] == (I32, [[9, 2, 5], [7, 1], [4]]), "request i's pages are row table_idx's, in order"
    assert got["cu_seqlens_q"] == (I32, [0, 3, 7, 10]), "in the list's order: 3, 4 and 3 new tokens"


def test_pages_out_of_order():
    """Pages that descend and jump (a request's pages are wherever the pool put them): page_table keeps the order
    of the positions (page k holds positions k * page_size ...), not sorted."""
    r = rng()
    p = r.choice([1, 4, 16])
    count = 5
    pages = r.sample(range(3, 60), count)
    while pages == sorted(pages):
        r.shuffle(pages)
    pt = torch.zeros(2, count * p, dtype=torch.int32)
    fill(pt, 1, pages, p)
    n = (count - 1) * p + r.randint(1, p)
    got = run(pt, p, [req(1, n - 1, n)])
    assert got["page_table"] == (I32, [pages]), f"page size {p}: the pages in the order of the positions"


def test_page_ids_not_slots():
    """page_table holds page ids (a page's first slot // page_size), read at positions 0, p, 2p, ...: neither
    slots nor every slot's page."""
    r = rng()
    p = r.choice([4, 16])
    pages = r.sample(range(2, 40), 3)
    pt = torch.zeros(2, 3 * p, dtype=torch.int32)
    fill(pt, 0, pages, p)
    n = 2 * p + r.randint(1, p)
    got = run(pt, p, [req(0, 0, n)])
    assert got["page_table"] == (I32, [pages]), \
        f"page size {p}: slots {[q * p for q in pages]} (first of each page) are pages {pages}"


def test_large_page_ids_exact():
    """A large pool (slot ids above 2**24, where float32 cannot hold every integer): page ids are exact integers,
    slot // page_size."""
    r = rng()
    p = r.choice([4, 16])
    count = 3
    pages = r.sample(range((1 << 24) // p + 1, (1 << 31) // p - 1), count)
    pt = torch.zeros(2, count * p, dtype=torch.int32)
    fill(pt, 0, pages, p)
    n = (count - 1) * p + r.randint(1, p)
    reqs = [req(0, n - 1, n)]
    got = run(pt, p, reqs)
    assert got == want_for(pt, p, reqs), f"page size {p}, pages {pages}: exact page ids in a large pool"


def test_int32_everywhere():
    """cu_seqlens_q, cache_seqlens and page_table are int32 (FlashAttention's index type); max_seqlen_q is a
    Python int."""
    r = rng()
    p = r.choice([1, 4, 16])
    pt = table(2, 32, p, r, dummy_page=40)
    reqs = [req(0, 3, r.randint(9, 32)), req(1, 0, r.randint(2, 8), uid=1)]
    got = run(pt, p, reqs)
    kinds = {k: v[0] for k, v in got.items() if k != "shape"}
    assert kinds == {"page_table": I32, "cache_seqlens": I32, "cu_seqlens_q": I32, "max_seqlen_q": "int"}, \
        "the dtype of each field"


def test_width_is_the_longest_page_count():
    """page_table has exactly ceil(max(device_len) / page_size) columns: a last page holding one token counts
    (lengths k * p + 1), and nothing more."""
    r = rng()
    for p in (1, 4, 16):
        pt = table(3, 4 * 16, p, r, dummy_page=300)
        longest = r.randint(1, 3) * p + 1
        reqs = [req(0, longest - 1, longest), req(2, 0, r.randint(1, longest), uid=1)]
        got = run(pt, p, reqs)
        assert got["shape"] == [2, n_pages(longest, p)], \
            f"page size {p}, the longest {longest} tokens: {n_pages(longest, p)} pages, the last holding one token"
        assert got == want_for(pt, p, reqs), f"page size {p}, lengths {[q.device_len for q in reqs]}"


def test_on_the_page_tables_device_no_host_sync():
    """The page table on the meta device (shapes and dtypes, no data: reading it on the host fails): every
    tensor is made on the page table's device, with the right shapes and dtypes, and no value of it is read."""
    r = rng()
    p = r.choice([4, 16])
    pt = table(3, 3 * 16, p, r, dummy_page=44).to("meta")
    reqs = [req(2, 4, r.randint(17, 48)), req(0, 0, r.randint(2, 16), uid=1), dummy(3)]
    try:
        meta = fa_metadata(reqs, pt, p)
        failure = None
    except (NotImplementedError, RuntimeError) as e:
        meta, failure = None, str(e).splitlines()[0]
    assert failure is None, "the metadata must be made on the page table's device, without reading its values " \
        "on the host (no .tolist(), .item(), .cpu()): a CUDA graph cannot wait for the host"
    devices = [t.device.type for t in (meta.page_table, meta.cache_seqlens, meta.cu_seqlens_q)]
    assert devices == ["meta", "meta", "meta"], "page_table, cache_seqlens and cu_seqlens_q on the page table's device"
    shapes = [list(t.shape) for t in (meta.page_table, meta.cache_seqlens, meta.cu_seqlens_q)]
    longest = max(q.device_len for q in reqs)
    assert shapes == [[3, n_pages(longest, p)], [3], [4]], "shapes [bs, pages of the longest], [bs], [bs + 1]"
    dtypes = [str(t.dtype) for t in (meta.page_table, meta.cache_seqlens, meta.cu_seqlens_q)]
    assert dtypes == [I32] * 3, "int32"


# ------------------------------------------------------------------------------------------- end to end

def emulated_flash_attn_with_kvcache(q, k_cache, v_cache, *, cache_seqlens, page_table, cu_seqlens_q, max_seqlen_q,
                                     softmax_scale, causal):
    """What FlashAttention-3's kernel computes, in torch (as tests/test_fa_backend.py): request i's queries (rows
    cu[i]:cu[i+1]) over the first cache_seqlens[i] tokens of its pages, in page-table order, causal bottom-right."""
    assert causal and k_cache.dim() == 4 and page_table.dtype == torch.int32 and cache_seqlens.dtype == torch.int32
    p = k_cache.shape[1]
    assert int((cu_seqlens_q[1:] - cu_seqlens_q[:-1]).max()) <= max_seqlen_q
    out = torch.empty_like(q)
    for i in range(cache_seqlens.numel()):
        n, a, b = int(cache_seqlens[i]), int(cu_seqlens_q[i]), int(cu_seqlens_q[i + 1])
        pages = page_table[i, : (n + p - 1) // p].long()
        slots = (pages[:, None] * p + torch.arange(p)).flatten()[:n]
        out[a:b] = attend(q[a:b], k_cache.flatten(0, 1)[slots], v_cache.flatten(0, 1)[slots], softmax_scale)
    return out


@contextlib.contextmanager
def fa_on_cpu():
    """Backend 'fa' on a CPU: the registry's factory without its CUDA check, the kernel emulated; put back after."""
    import minisgl.attention.fa as fa

    def make(num_heads, num_kv_heads, head_dim, page_table, device, page_size, dtype):
        return fa.FlashAttentionBackend(num_heads, num_kv_heads, head_dim, page_table, device, page_size)

    items = ATTENTION_BACKENDS._items
    saved = items["fa"], fa._flash_attn_with_kvcache
    items["fa"], fa._flash_attn_with_kvcache = make, lambda: emulated_flash_attn_with_kvcache
    try:
        yield
    finally:
        items["fa"], fa._flash_attn_with_kvcache = saved


def differences(got, want, margins) -> list:
    """(prompt, step, ours, transformers') of the first difference in each prompt that is not a near-tie (the two
    best logits of transformers within 1e-4: float rounding may pick either)."""
    out = []
    for i, (a, b, m) in enumerate(zip(got, want, margins)):
        step = next((s for s, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if (step is not None and m[step] >= 1e-4) or len(a) != len(b):
            out.append((i, step, a, b))
    return out


def test_engine_same_tokens_as_transformers():
    """The tiny Qwen3 served by the FlashAttention backend on a CPU (the kernel emulated), CUDA graphs on
    (EmulatedGraph, padded batches), prompts sharing a prefix (the radix cache): the engine's tokens are
    transformers' greedy ones, graphs replayed and a prefix was reused."""
    from minisgl.testing import hf_greedy_with_margins, tiny_model

    r = rng()
    shared = PROMPT_IDS[3]
    prompts = [shared, *hidden_prompts(2, 3, 12, r=r), shared[:8] + [r.randrange(1, 512)]]
    n = 6
    prefixes = []
    with fa_on_cpu(), engine(backend="fa", max_bs=4) as llm:
        trace = Trace(llm)
        prepare = llm.engine.attn_backend.prepare_metadata

        def traced(batch):
            if batch.is_prefill:
                prefixes.extend(q.cached_len for q in batch.reqs)
            return prepare(batch)

        llm.engine.attn_backend.prepare_metadata = traced
        first = [list(o["token_ids"]) for o in llm.generate(prompts[:3], SamplingParams(max_tokens=n, ignore_eos=True))]
        last = [list(o["token_ids"]) for o in llm.generate(prompts[3:], SamplingParams(max_tokens=n, ignore_eos=True))]
    got = first + last
    want, margins = hf_greedy_with_margins(str(tiny_model("qwen3", tied=draw_engine().tied)), prompts, n)
    assert differences(got, want, margins) == [], \
        "(prompt, first differing step, your tokens, transformers') where they differ"
    assert first == eager_tokens(prompts[:3], n), "the same tokens as the engine's own code (torch backend, no graphs)"
    assert last == eager_tokens(prompts[3:], n), "the last prompt (a cached prefix): the engine's own code's tokens"
    replayed = len(trace.replays) > 0
    assert replayed is True, "the decode steps replayed the emulated CUDA graphs"
    reused = max(prefixes) > 0
    assert reused is True, "the last prompt's prefill reused the cached prefix of the first (cached_len > 0)"

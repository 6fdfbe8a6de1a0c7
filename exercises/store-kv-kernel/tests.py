"""Tests for store-kv-kernel: the caches after store_kv equal store_kv_torch's bit for bit (page sizes 1 and 16,
head dims 64 and 128, 1 to 3 KV heads, rows longer than a block, four dtypes, fused-QKV views, int32 and int64
slots, a 2 GiB pool), nothing else changed, the caches written by the kernel (not by torch), the refusals; then
the tiny Qwen3 generating with the kernel in its pool. On a CPU the kernels run in Triton's interpreter."""

import random

import torch
import triton  # noqa: F401 - the warm judge imports it once (its interpreter on a CPU), not each judging
import triton.experimental.gluon  # noqa: F401 - what a kernel's first launch imports (0.2 s): once too
from torch.overrides import TorchFunctionMode

from judge.testing import eager_tokens, engine, engine_device, generate, hidden_prompts, rng
from minisgl.kernel.store import store_kv, store_kv_torch
from minisgl.kvcache.pool import TritonKVCachePool

FP8 = torch.float8_e4m3fn


class _CacheWrites(TorchFunctionMode):
    """Records the torch calls that write into the caches' memory while store_kv runs: an in-place method (its name
    ends in _), an item assignment or an out= argument, on a tensor that shares a cache's memory. Triton's
    interpreter copies its buffers onto themselves around a launch (a copy_ from the same memory): not a write."""

    def __init__(self, *caches: torch.Tensor):
        super().__init__()
        self.ptrs = {c.untyped_storage().data_ptr() for c in caches}
        self.writes: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        written = [args[0]] if args and (name == "__setitem__" or name.endswith("_") and not name.endswith("__")) \
            else []
        out = kwargs.get("out")
        written += list(out) if isinstance(out, (tuple, list)) else [out]
        for x in written:
            if not isinstance(x, torch.Tensor) or x.untyped_storage().data_ptr() not in self.ptrs:
                continue
            ptr = x.untyped_storage().data_ptr()
            sources = [a for a in list(args[1:]) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
            if not (name == "copy_" and sources and all(a.untyped_storage().data_ptr() == ptr for a in sources)):
                self.writes.append(name)
        return func(*args, **kwargs)


def call(k_cache, v_cache, k, v, loc) -> list:
    """store_kv(...), watched: the torch operations that wrote into a cache (none for a kernel)."""
    with _CacheWrites(k_cache, v_cache) as watch:
        store_kv(k_cache, v_cache, k, v, loc)
    return sorted(set(watch.writes))


def bits(x: torch.Tensor) -> torch.Tensor:
    """The bytes of x (compared bit for bit: -0.0, NaNs and fp8 included)."""
    return x.contiguous().view(torch.uint8)


def values(gen: torch.Generator, shape, dtype) -> torch.Tensor:
    """Random values of ``dtype`` drawn on the CPU from ``gen`` (the same in every process), on the engine's
    device."""
    return (torch.randn(shape, generator=gen) * 3).to(dtype).to(engine_device())


def slots_of(r: random.Random, num_pages: int, page_size: int, n: int) -> list:
    """The slots a batch writes, as the scheduler's out_loc: requests of a few tokens, each continuing its own
    pages from some offset (page size 1: slots scattered over the pool)."""
    pages = r.sample(range(num_pages), num_pages)
    out: list = []
    while len(out) < n:
        take = min(n - len(out), r.randint(1, 12))
        start = r.randrange(page_size)
        need = (start + take + page_size - 1) // page_size
        mine, pages = pages[:need], pages[need:]
        out += [mine[(start + i) // page_size] * page_size + (start + i) % page_size for i in range(take)]
    return out


def pool(gen: torch.Generator, slots: int, heads: int, dim: int, dtype) -> torch.Tensor:
    """A cache of random contents: the first ``slots`` rows of a buffer with a block's worth of rows more past its
    end (whatever is stored past the pool's end lands there, and is seen)."""
    return values(gen, (slots + 256 // (heads * dim) + 2, heads, dim), dtype)[:slots]


def buffer(cache: torch.Tensor) -> torch.Tensor:
    """The whole buffer a cache is the start of (itself where it is no view)."""
    return cache if cache._base is None else cache._base


def make(r: random.Random, n: int, heads: int, dim: int, page_size: int, dtype, *, fused: bool = True,
         flat: bool = False, loc_dtype=torch.int32):
    """Caches of random contents (a pool of a few spare pages), k and v (views of one fused QKV output, as the
    attention layer has them, or contiguous), out_loc."""
    gen = torch.Generator().manual_seed(r.randrange(2**31))
    num_pages = 2 * n + r.randint(3, 8)  # enough: a request of t tokens takes at most 2 * t pages
    slots = num_pages * page_size
    k_cache, v_cache = pool(gen, slots, heads, dim, dtype), pool(gen, slots, heads, dim, dtype)
    row = heads * dim
    if fused:  # q (4 heads per KV head), k, v side by side in each token's row: rows strided past each other
        qkv = values(gen, (n, 6 * row), dtype)
        k, v = qkv[:, 4 * row:5 * row], qkv[:, 5 * row:]
    else:
        k, v = values(gen, (n, row), dtype), values(gen, (n, row), dtype)
    if not flat:
        k, v = k.view(n, heads, dim), v.view(n, heads, dim)
    loc = torch.tensor(slots_of(r, num_pages, page_size, n), dtype=loc_dtype, device=engine_device())
    return k_cache, v_cache, k, v, loc


def differing(got: torch.Tensor, want: torch.Tensor) -> list:
    """The slots whose row differs, bit for bit."""
    a, b = bits(got).view(got.shape[0], -1), bits(want).view(want.shape[0], -1)
    return (a != b).any(1).nonzero().flatten().tolist()


def check(k_cache, v_cache, k, v, loc, what: str) -> None:
    """store_kv, then every promise on its result: the rows at out_loc, nothing else, the inputs, no torch write."""
    want_k, want_v = buffer(k_cache).clone(), buffer(v_cache).clone()
    shape = (loc.numel(), *k_cache.shape[1:])
    size = k_cache.shape[0]
    store_kv_torch(want_k[:size], want_v[:size], k.reshape(shape), v.reshape(shape), loc)
    before = (bits(k).clone(), bits(v).clone(), loc.clone())
    writes = call(k_cache, v_cache, k, v, loc)
    slots = loc.tolist()
    at = {s: i for i, s in enumerate(slots)}
    for name, got, want in (("K", buffer(k_cache), want_k), ("V", buffer(v_cache), want_v)):
        diff = differing(got, want)
        wrong = [(at[s], s) for s in diff if s in at]
        assert wrong[:4] == [], f"{what}: the {name} row at out_loc[i] must be {name.lower()}[i] bit for bit: " \
                                f"(i, slot) of the first rows that differ"
        outside = [s for s in diff if s not in at]
        assert outside[:4] == [], f"{what}: slots outside out_loc (and rows past the pool's end, from {size} on) " \
                                  f"must not change; these {name} rows did (a row's last block stored past its end?)"
    unchanged = (torch.equal(bits(k), before[0]), torch.equal(bits(v), before[1]), torch.equal(loc, before[2]))
    assert unchanged == (True, True, True), f"{what}: k, v and out_loc are left as they were: (k, v, out_loc)"
    assert writes == [], f"{what}: the caches must be written by your kernel, not by torch operations (these " \
                         "wrote into them)"


def describe(n, heads, dim, page_size, dtype, **kw) -> str:
    extra = "".join(f", {k}={v}" for k, v in kw.items())
    return f"{n} tokens, {heads} KV heads of {dim} (ROW {heads * dim}), page size {page_size}, " \
           f"{str(dtype).removeprefix('torch.')}{extra}"


def run_case(r, n, heads, dim, page_size, dtype, **kw) -> None:
    check(*make(r, n, heads, dim, page_size, dtype, **kw), describe(n, heads, dim, page_size, dtype, **kw))


# ------------------------------------------------------------------------------------------- examples

def test_example_fused_qkv_long_rows():
    """5 tokens, 3 KV heads of 128 (ROW 384: a full block and a masked half one), page size 4, K and V slices of a
    fused QKV output (rows strided), float32."""
    run_case(random.Random(19), 5, 3, 128, 4, torch.float32)


def test_example_one_token():
    """One token, one KV head of 64 (ROW 64: one masked block), page size 1, bfloat16."""
    run_case(random.Random(7), 1, 1, 64, 1, torch.bfloat16, fused=False)


# ------------------------------------------------------------------------------------------- hidden

def test_page_sizes_and_head_dims():
    """Page sizes 1 and 16, head dims 64 and 128, 1 to 3 KV heads, 1 to 40 tokens, fused-QKV views: bit for bit,
    nothing else changed."""
    r = rng()
    for page_size in (1, 16):
        for dim in (64, 128):
            heads = r.randint(1, 3)
            n = r.choice([1, r.randint(2, 12), r.randint(25, 40)])
            run_case(r, n, heads, dim, page_size, torch.float32)


def test_rows_longer_than_a_block():
    """ROW 384 (3 heads of 128) and 320 (5 of 64): every block of every row is copied, the last one masked."""
    r = rng()
    run_case(r, r.randint(8, 20), 3, 128, r.choice([1, 16]), torch.float32)
    run_case(r, r.randint(3, 10), 5, 64, 16, torch.bfloat16)


def test_dtypes():
    """float32, bfloat16, float16 and float8 (e4m3) caches: a copy of the bits, whatever the dtype."""
    r = rng()
    for dtype in (torch.float32, torch.bfloat16, torch.float16, FP8):
        run_case(r, r.randint(2, 12), r.randint(1, 2), r.choice([64, 128]), r.choice([1, 16]), dtype)


def test_views_and_layouts():
    """k and v as [n, heads, dim] or [n, heads * dim], slices of a fused QKV output or contiguous, a transposed
    view (not contiguous within a row), and one of them contiguous beside the other a slice (each its own stride)."""
    r = rng()
    run_case(r, r.randint(5, 20), 2, 64, 16, torch.float32, flat=True)
    run_case(r, r.randint(5, 20), 1, 128, 1, torch.float16, fused=False)
    run_case(r, r.randint(5, 20), 2, 128, 16, torch.float32, fused=False, flat=True)
    n, heads, dim = r.randint(4, 12), 2, 64
    k_cache, v_cache, k, v, loc = make(r, n, heads, dim, 1, torch.float32)
    k = k.transpose(1, 2).contiguous().transpose(1, 2)  # the same values, dim before heads in memory
    v = v.reshape(n, heads * dim).t().contiguous().t()  # column-major
    check(k_cache, v_cache, k, v, loc, describe(n, heads, dim, 1, torch.float32, layout="transposed views"))
    for which in ("k", "v"):  # one a new tensor (as RoPE returns k), the other a slice: rows apart by its own stride
        k_cache, v_cache, k, v, loc = make(r, r.randint(4, 12), 2, 64, 16, torch.float32)
        k, v = (k.contiguous(), v) if which == "k" else (k, v.contiguous())
        check(k_cache, v_cache, k, v, loc, describe(loc.numel(), 2, 64, 16, torch.float32,
                                                    layout=f"{which} contiguous, the other a slice of the fused QKV"))


def test_slot_dtypes_and_views():
    """out_loc int32 or int64, and a strided view of a longer tensor of slots."""
    r = rng()
    run_case(r, r.randint(5, 30), 2, 64, 1, torch.float32, loc_dtype=torch.int64)
    run_case(r, r.randint(5, 30), 1, 128, 16, torch.float32, loc_dtype=torch.int32)
    k_cache, v_cache, k, v, loc = make(r, r.randint(4, 16), 2, 64, 1, torch.float32)
    spare = min(set(range(k_cache.shape[0])) - set(loc.tolist()))  # a slot of the pool that is not written
    wide = torch.stack([loc, torch.full_like(loc, spare)], 1)
    check(k_cache, v_cache, k, v, wide[:, 0], "out_loc a strided view (every other element of a longer tensor)")


def test_neighbours_untouched():
    """Slots side by side and slots alone, in a pool whose other rows hold random values: only the rows at out_loc
    change (a row's last block stored unmasked overwrites the next slot)."""
    r = rng()
    for heads, dim in ((1, 64), (3, 64)):
        gen = torch.Generator().manual_seed(r.randrange(2**31))
        k_cache, v_cache = pool(gen, 64, heads, dim, torch.float32), pool(gen, 64, heads, dim, torch.float32)
        k, v = values(gen, (6, heads, dim), torch.float32), values(gen, (6, heads, dim), torch.float32)
        base = r.randrange(2, 40)  # away from the pool's end
        slots = [base, base + 1, base + 2, base + 5, base + 9, 0]
        r.shuffle(slots)
        loc = torch.tensor(slots, dtype=torch.int32, device=engine_device())
        check(k_cache, v_cache, k, v, loc, f"slots {slots}, ROW {heads * dim}")


def test_one_slot_pool():
    """A pool of a single slot (and one token into it)."""
    r = rng()
    gen = torch.Generator().manual_seed(r.randrange(2**31))
    k_cache, v_cache = pool(gen, 1, 2, 64, torch.float32), pool(gen, 1, 2, 64, torch.float32)
    k, v = values(gen, (1, 2, 64), torch.float32), values(gen, (1, 2, 64), torch.float32)
    check(k_cache, v_cache, k, v, torch.zeros(1, dtype=torch.int32, device=engine_device()), "a pool of one slot")


def test_empty_batch():
    """out_loc of 0 slots: nothing changes, nothing is raised."""
    r = rng()
    gen = torch.Generator().manual_seed(r.randrange(2**31))
    k_cache, v_cache = values(gen, (16, 2, 64), torch.float32), values(gen, (16, 2, 64), torch.float32)
    before = (k_cache.clone(), v_cache.clone())
    empty = torch.zeros(0, 2, 64, device=engine_device())
    try:
        call(k_cache, v_cache, empty, empty.clone(), torch.zeros(0, dtype=torch.int32, device=engine_device()))
        raised = None
    except Exception as e:  # noqa: BLE001 - what the learner's launcher raised
        raised = f"{type(e).__name__}: {e}"
    assert raised is None, "an empty batch (0 slots) raises nothing"
    same = (torch.equal(k_cache, before[0]), torch.equal(v_cache, before[1]))
    assert same == (True, True), "an empty batch changes nothing: (K cache, V cache) unchanged"


def test_slots_beyond_int32_offsets():
    """A 2 GiB fp8 pool of 2**31 / 128 + 256 slots of ROW 128: slot * ROW passes 2**31 for the high slots, so the
    offsets must be int64 (out_loc is int32). The two caches share one buffer, V's shifted 8 slots past K's, so
    that the test fits in memory; the slots written never meet."""
    r = rng()
    heads, dim = 2, 64
    row = heads * dim
    slots, shift = 2**31 // row + 256, 8
    buf = torch.empty((slots + shift) * row, dtype=FP8, device=engine_device())
    k_cache = buf[:slots * row].view(slots, heads, dim)
    v_cache = buf[shift * row:].view(slots, heads, dim)
    high = r.sample(range(2**31 // row + 1, slots - shift - 2, 20), 5)
    low = r.sample(range(20, 20_000, 20), 3)
    chosen = high + low
    r.shuffle(chosen)
    gen = torch.Generator().manual_seed(r.randrange(2**31))
    rows = sorted({s + d for s in chosen for d in range(-1, shift + 2)})  # K's rows, V's and their neighbours
    rows_t = torch.tensor(rows, device=engine_device())
    start = values(gen, (len(rows), row), FP8)
    buf.view(-1, row)[rows_t] = start
    k, v = values(gen, (len(chosen), heads, dim), FP8), values(gen, (len(chosen), heads, dim), FP8)
    loc = torch.tensor(chosen, dtype=torch.int32, device=engine_device())
    writes = call(k_cache, v_cache, k, v, loc)
    want = start.clone()
    where = {x: i for i, x in enumerate(rows)}
    for i, s in enumerate(chosen):
        want[where[s]] = k[i].reshape(row)
        want[where[s + shift]] = v[i].reshape(row)
    got = buf.view(-1, row)[rows_t]
    wrong_k = [(i, s) for i, s in enumerate(chosen) if not torch.equal(bits(got[where[s]]), bits(want[where[s]]))]
    assert wrong_k[:4] == [], "the K rows at slots past 2**31 / ROW (slot * ROW > 2**31 - 1: int64 offsets) must be " \
                              "k's: (i, slot) of the first that differ"
    wrong_v = [(i, s) for i, s in enumerate(chosen)
               if not torch.equal(bits(got[where[s + shift]]), bits(want[where[s + shift]]))]
    assert wrong_v[:4] == [], "the V rows at those slots must be v's: (i, slot) of the first that differ"
    changed = [x for x in rows if not torch.equal(bits(got[where[x]]), bits(want[where[x]]))]
    assert changed[:4] == [], "the rows next to the slots written must not change"
    assert writes == [], "the caches must be written by your kernel, not by torch operations"


def test_written_by_the_kernel():
    """The caches are written by the kernel: no torch operation writes into them during the call."""
    r = rng()
    k_cache, v_cache, k, v, loc = make(r, r.randint(3, 10), 2, 64, 16, torch.float32)
    writes = call(k_cache, v_cache, k, v, loc)
    assert writes == [], "the caches must be written by your kernel, not by torch operations (these wrote into them)"


def refused(k_cache, v_cache, k, v, loc) -> tuple:
    """(the exception's type name or None, whether both caches are unchanged)."""
    before = (k_cache.clone(), v_cache.clone())
    try:
        store_kv(k_cache, v_cache, k, v, loc)
        kind = None
    except Exception as e:  # noqa: BLE001 - what the learner's launcher raised
        kind = type(e).__name__
    return kind, torch.equal(k_cache, before[0]) and torch.equal(v_cache, before[1])


def test_refuses_other_dtypes():
    """k or v not of its cache's dtype (only one of them wrong, each way): ValueError, nothing stored."""
    r = rng()
    k_cache, v_cache, k, v, loc = make(r, r.randint(2, 8), 2, 64, 1, torch.bfloat16, fused=False)
    got = refused(k_cache, v_cache, k.float(), v, loc)
    assert got == ("ValueError", True), "k float32 into bfloat16 caches: (exception, caches unchanged)"
    got = refused(k_cache, v_cache, k, v.half(), loc)
    assert got == ("ValueError", True), "v float16 into bfloat16 caches (k right): (exception, caches unchanged)"


def test_refuses_bad_caches():
    """A cache that is not contiguous (the K one only, the V one only), or caches of two shapes: ValueError."""
    r = rng()
    n = r.randint(2, 8)
    k_cache, v_cache, k, v, loc = make(r, n, 2, 64, 1, torch.float32)
    wide = torch.zeros(k_cache.shape[0], 2, 128, device=engine_device())
    strided = wide[:, :, :64]  # [slots, 2, 64], rows 256 apart: not contiguous
    got = refused(strided, v_cache, k, v, loc)
    assert got == ("ValueError", True), "a K cache that is not contiguous: (exception, caches unchanged)"
    got = refused(k_cache, strided, k, v, loc)
    assert got == ("ValueError", True), "a V cache that is not contiguous (K's is): (exception, caches unchanged)"
    longer = torch.zeros(k_cache.shape[0] + 4, 2, 64, device=engine_device())
    got = refused(k_cache, longer, k, v, loc)
    assert got == ("ValueError", True), "K and V caches of different shapes: (exception, caches unchanged)"
    folded = torch.zeros(k_cache.shape[0] * 2, 1, 64, device=engine_device())  # as many elements, another shape
    got = refused(k_cache, folded, k, v, loc)
    assert got == ("ValueError", True), "K and V caches of different shapes, as many elements: (exception, caches unchanged)"


def test_refuses_bad_rows():
    """k or v not n rows of ROW elements (n = out_loc.numel()): ValueError, nothing stored."""
    r = rng()
    n = r.randint(3, 8)
    k_cache, v_cache, k, v, loc = make(r, n, 2, 64, 1, torch.float32, fused=False)
    got = refused(k_cache, v_cache, k[:, :, :32], v, loc)
    assert got == ("ValueError", True), "k of rows of 64 elements for a ROW of 128: (exception, caches unchanged)"
    got = refused(k_cache, v_cache, k, v[:, :1], loc)
    assert got == ("ValueError", True), "v of rows of 64 elements for a ROW of 128: (exception, caches unchanged)"
    got = refused(k_cache, v_cache, k, v, loc[:-1])
    assert got == ("ValueError", True), f"{n} rows of k and v for {n - 1} slots: (exception, caches unchanged)"


# ------------------------------------------------------------------------------------------- end to end

def test_engine_same_tokens_with_your_kernel():
    """The tiny Qwen3 generating with your store_kv in its pool (TritonKVCachePool, the pool the engine builds on
    CUDA): the tokens of the engine's own code."""
    import minisgl.kernel as kernels

    prompts = hidden_prompts(3, 4, 10)
    yours = kernels.store_kv  # what TritonKVCachePool.store_kv imports: your function
    stored: list = []

    def counted(k_cache, v_cache, k, v, out_loc):
        stored.append(out_loc.numel())
        return yours(k_cache, v_cache, k, v, out_loc)

    kernels.store_kv = counted
    try:
        with engine() as llm:
            llm.engine.kv_cache.__class__ = TritonKVCachePool  # what the engine builds on CUDA
            got = generate(llm, prompts, 4)
    finally:
        kernels.store_kv = yours
    assert sum(stored) > 0, "the pool stores K and V with your store_kv"
    assert got == eager_tokens(prompts, 4), "the tokens with your kernel in the pool differ from the engine's own"

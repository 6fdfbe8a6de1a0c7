"""Tests for torch-attn-forward: what is stored where, each request's output, then the tiny model."""

import random

import torch

from judge.testing import PROMPT_IDS, engine, expected, generate, hidden_prompts, rng
from minisgl.attention.torch_backend import TorchAttnBackend
from minisgl.core import Batch, Context, Req, set_global_ctx
from minisgl.kvcache import KVCachePool

CPU = torch.device("cpu")
LAYERS, SLOTS, ROWS, WIDTH = 3, 300, 7, 30


def tensor(g, *shape) -> torch.Tensor:
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([round(g.uniform(-1.5, 1.5), 4) for _ in range(n)], dtype=torch.float32).reshape(*shape)


def setup(g, hq: int, hkv: int, d: int):
    """A KV pool whose every slot holds old random values, a page table of distinct random slots, a backend."""
    pool = KVCachePool(LAYERS, SLOTS - 1, 1, hkv, d, torch.float32, CPU)
    pool._k[:] = tensor(g, LAYERS, SLOTS, hkv, d)
    pool._v[:] = tensor(g, LAYERS, SLOTS, hkv, d)
    slots = list(range(SLOTS))
    g.shuffle(slots)
    table = torch.tensor(slots[: ROWS * WIDTH], dtype=torch.int32).reshape(ROWS, WIDTH)
    be = TorchAttnBackend(hq, hkv, d, table, CPU)
    return pool, be


def make_batch(be, reqs, phase):
    batch = Batch(reqs=reqs, phase=phase)
    batch.out_loc = torch.tensor([int(be.page_table[r.table_idx, j]) for r in reqs
                                  for j in range(r.cached_len, r.device_len)], dtype=torch.int32)
    be.prepare_metadata(batch)  # the engine's own metadata
    return batch


def request(row, cached, device):
    r = Req(input_ids=[3] * device, table_idx=row, cached_len=cached, output_len=4, uid=row)
    r.device_len = device
    return r


def random_reqs(g, decode: bool, count: int | None = None):
    out = []
    for row in g.sample(range(ROWS), count or g.randint(2, 4)):
        cached = g.randint(0 if not decode else 1, 12)
        out.append(request(row, cached, cached + (1 if decode else g.randint(1, 8))))
    return out


def naive_attend(q, k, v, scale):
    """Causal (bottom-right) GQA attention, written out (the test's own)."""
    n, hq, d = q.shape
    L, hkv = k.shape[0], k.shape[1]
    out = torch.zeros(n, hq, d)
    for h in range(hq):
        kv = h // (hq // hkv)
        s = (q[:, h] @ k[:, kv].T) * scale
        allowed = torch.arange(L)[None, :] <= torch.arange(L - n, L)[:, None]
        s = s.masked_fill(~allowed, float("-inf"))
        out[:, h] = torch.softmax(s, dim=-1) @ v[:, kv]
    return out


def run_forward(g, hq, hkv, d, decode, count=None, scale=None):
    pool, be = setup(g, hq, hkv, d)
    if scale is not None:
        be.scale = scale
    reqs = random_reqs(g, decode, count)
    batch = make_batch(be, reqs, "decode" if decode else "prefill")
    t = sum(r.extend_len for r in reqs)
    q, k, v = tensor(g, t, hq, d), tensor(g, t, hkv, d), tensor(g, t, hkv, d)
    layer = g.randrange(LAYERS)
    before_k, before_v = pool._k.clone(), pool._v.clone()
    set_global_ctx(Context(1, pool, be))
    try:
        out = be.forward(q, k, v, layer, batch)
    finally:
        set_global_ctx(None)
    return pool, be, reqs, batch, (q, k, v, layer), (before_k, before_v), out


def check(g, hq, hkv, d, decode, what, count=None, scale=None):
    pool, be, reqs, batch, (q, k, v, layer), (before_k, before_v), out = run_forward(g, hq, hkv, d, decode, count,
                                                                                     scale)
    loc = batch.out_loc.long()
    stored = torch.equal(pool._k[layer][loc], k) and torch.equal(pool._v[layer][loc], v)
    assert stored, f"{what}: k and v must be stored at batch.out_loc in layer {layer} of the KV pool"
    others = [i for i in range(LAYERS) if i != layer]
    untouched = torch.equal(pool._k[others], before_k[others]) and torch.equal(pool._v[others], before_v[others])
    assert untouched, f"{what}: only layer {layer} of the KV pool may be written"
    assert list(out.shape) == list(q.shape), f"{what}: the output is [T, Hq, D] = {list(q.shape)}"
    start = 0
    for i, r in enumerate(reqs):
        n = r.extend_len
        slots = be.page_table[r.table_idx, : r.device_len].long()
        want = naive_attend(q[start : start + n], pool._k[layer][slots], pool._v[layer][slots], be.scale)
        got = out[start : start + n]
        ok = bool(torch.allclose(got, want, atol=1e-5))
        why = ""
        if not ok:
            qs, kv_rows = q[start : start + n], slice(start, start + n)
            row_i = be.page_table[i, : r.device_len].long()
            mistakes = [
                (before_k[layer][slots], before_v[layer][slots], "it read the keys before they were stored"),
                (k[kv_rows], v[kv_rows], "it attended over the batch's new keys only, not its cached positions"),
                (pool._k[layer][row_i], pool._v[layer][row_i],
                 "its slots came from the engine's page-table row i, not the metadata's row i"),
                (pool._k[0][slots], pool._v[0][slots], "it read layer 0's cache instead of layer_id's"),
                (pool._k[layer][slots[:n]], pool._v[layer][slots[:n]],
                 "it attended over extend_len keys instead of cache_seqlens"),
            ]
            why = "its queries must attend over the keys/values at its page-table slots, after storing"
            for kk, vv, reason in mistakes:
                if list(kk.shape)[0] >= n and torch.allclose(got, naive_attend(qs, kk, vv, be.scale), atol=1e-5):
                    why = reason
                    break
        assert ok, (f"{what}: request {i} (rows {start}:{start + n}, {r.device_len} keys, {r.cached_len} "
                    f"of them cached before) attends wrongly: {why}")
        start += n


def test_example_prefill_after_a_prefix():
    """Two prefills (one after a reused prefix), GQA 4/2: stored at out_loc, each request's output."""
    check(random.Random(1), 4, 2, 6, False, "prefill")


def test_example_decode():
    """A decode batch: one new token per request, attending over all its cached keys and itself."""
    check(random.Random(2), 4, 2, 6, True, "decode")


def test_random_prefills():
    """Random prefill batches and head counts (MHA, GQA, MQA)."""
    g = rng()
    for hq, hkv in ((3, 3), (6, 2), (4, 1)):
        check(g, hq, hkv, g.choice([5, 7]), False, f"prefill, heads {hq}/{hkv}")


def test_random_decodes():
    """Random decode batches."""
    g = rng()
    for hq, hkv in ((4, 2), (2, 1)):
        check(g, hq, hkv, g.choice([5, 7]), True, f"decode, heads {hq}/{hkv}")


def test_a_batch_of_one_request():
    """A batch of a single request (a prefill, then a decode): bs = 1, the output is that request's, [T, Hq, D]."""
    check(random.Random(4), 4, 2, 6, False, "a prefill of one request", count=1)
    g = rng()
    check(g, 4, 2, g.choice([5, 7]), True, "a decode of one request", count=1)
    check(g, 6, 2, g.choice([5, 7]), False, "a prefill of one request, heads 6/2", count=1)


def test_store_into_layer_id_only():
    """Store into layer layer_id, every layer in turn: its K and V hold k and v at out_loc, the other layers keep
    their old values, and the output reads that layer's cache."""
    g = rng()
    for layer in range(LAYERS):
        pool, be = setup(g, 4, 2, 5)
        reqs = random_reqs(g, decode=False)
        batch = make_batch(be, reqs, "prefill")
        t = sum(r.extend_len for r in reqs)
        q, k, v = tensor(g, t, 4, 5), tensor(g, t, 2, 5), tensor(g, t, 2, 5)
        before_k, before_v = pool._k.clone(), pool._v.clone()
        set_global_ctx(Context(1, pool, be))
        try:
            out = be.forward(q, k, v, layer, batch)
        finally:
            set_global_ctx(None)
        loc = batch.out_loc.long()
        assert torch.equal(pool._k[layer][loc], k) and torch.equal(pool._v[layer][loc], v), \
            f"layer_id = {layer}: k and v must be stored at batch.out_loc in layer {layer}"
        others = [i for i in range(LAYERS) if i != layer]
        assert torch.equal(pool._k[others], before_k[others]) and torch.equal(pool._v[others], before_v[others]), \
            f"layer_id = {layer}: only layer {layer} of the KV pool may be written"
        r = reqs[0]
        slots = be.page_table[r.table_idx, : r.device_len].long()
        want = naive_attend(q[: r.extend_len], pool._k[layer][slots], pool._v[layer][slots], be.scale)
        assert torch.allclose(out[: r.extend_len], want, atol=1e-5), \
            f"layer_id = {layer}: request 0 must attend over layer {layer}'s cache at its slots"


def check_padded(g, pad: int) -> None:
    """2 real decode requests padded with `pad` dummy requests: a row per query row, the real rows right."""
    pool, be = setup(g, 4, 2, 6)
    dummy_row = ROWS - 1
    be.page_table[dummy_row] = pool.dummy_slot  # every position of the dummy's row: the dummy slot
    real = [request(row, c, c + 1) for row, c in zip(g.sample(range(ROWS - 1), 2), (g.randint(1, 9), 12))]
    dummy = Req(input_ids=[0], table_idx=dummy_row, cached_len=0, output_len=1, uid=-1)
    batch = Batch(reqs=real, phase="decode", padded_reqs=real + [dummy] * pad)
    batch.out_loc = torch.tensor([int(be.page_table[r.table_idx, r.cached_len]) for r in batch.padded_reqs],
                                 dtype=torch.int32)
    be.prepare_metadata(batch)  # the engine's own metadata, over padded_reqs
    t = len(batch.padded_reqs)
    q, k, v = tensor(g, t, 4, 6), tensor(g, t, 2, 6), tensor(g, t, 2, 6)
    set_global_ctx(Context(1, pool, be))
    try:
        out = be.forward(q, k, v, 0, batch)
    finally:
        set_global_ctx(None)
    assert list(out.shape) == [t, 4, 6], (f"2 real requests padded with {pad} dummies: {t} query rows, so "
                                          f"{t} output rows (bs = len(cache_seqlens), padded_reqs count)")
    dummy_k, dummy_v = pool._k[0][pool.dummy_slot], pool._v[0][pool.dummy_slot]
    stored = (any(torch.equal(dummy_k, k[j]) for j in range(2, t)), any(torch.equal(dummy_v, v[j]) for j in range(2, t)))
    assert stored == (True, True), ("padded batch: every token's k and v are stored at its out_loc, the dummy "
                                    "requests' too (at the dummy slot): (k stored, v stored)")
    for i, r in enumerate(real):
        slots = be.page_table[r.table_idx, : r.device_len].long()
        want = naive_attend(q[i : i + 1], pool._k[0][slots], pool._v[0][slots], be.scale)
        close = torch.allclose(out[i : i + 1], want, atol=1e-5)
        assert close, f"padded batch: real request {i} attends over its own {r.device_len} keys"


def test_example_padded_decode():
    """A decode batch of 2 padded with one dummy request (as for a CUDA graph's batch size): the metadata counts
    padded_reqs, so the output has 3 rows, and the real requests' rows are right."""
    check_padded(random.Random(3), 1)


def test_padded_decode_batch_has_a_row_per_query():
    """A decode batch padded with dummy requests (as for a CUDA graph's batch size): the metadata counts
    padded_reqs, so the output has a row for every query row, dummies included, and the real rows are right."""
    g = rng()
    for pad in (1, g.randint(2, 3)):
        check_padded(g, pad)


def test_attend_with_self_scale():
    """The backend's own softmax scale, self.scale (here not head_dim ** -0.5): each request's output uses it."""
    g = rng()
    check(g, 4, 2, 5, False, "prefill, self.scale set to another value", scale=round(g.uniform(0.6, 1.2), 3))
    check(g, 4, 2, 7, True, "decode, self.scale set to another value", scale=round(g.uniform(0.6, 1.2), 3))


def test_a_new_batch_on_the_same_layer():
    """The same backend and layer, two batches in a row (a prefill, then a decode of other requests): each call
    reads its own batch's metadata, not the previous call's."""
    g = rng()
    pool, be = setup(g, 4, 2, 6)
    layer = g.randrange(LAYERS)
    for phase in ("prefill", "decode"):
        reqs = random_reqs(g, phase == "decode", 3 if phase == "prefill" else 2)
        batch = make_batch(be, reqs, phase)
        t = sum(r.extend_len for r in reqs)
        q, k, v = tensor(g, t, 4, 6), tensor(g, t, 2, 6), tensor(g, t, 2, 6)
        set_global_ctx(Context(1, pool, be))
        try:
            out = be.forward(q, k, v, layer, batch)
        finally:
            set_global_ctx(None)
        assert list(out.shape) == [t, 4, 6], f"{phase} after another batch: the output is [T, Hq, D] = [{t}, 4, 6]"
        start = 0
        for i, r in enumerate(reqs):
            n = r.extend_len
            slots = be.page_table[r.table_idx, : r.device_len].long()
            want = naive_attend(q[start : start + n], pool._k[layer][slots], pool._v[layer][slots], be.scale)
            close = torch.allclose(out[start : start + n], want, atol=1e-5)
            assert close, f"{phase} after another batch on layer {layer}: request {i} must use this batch's metadata"
            start += n


def test_output_in_the_dtype_of_q():
    """A float64 model (pool, q, k, v): the output is float64 too, the dtype the next layer expects (not attend's
    float32 scores' dtype)."""
    g = rng()
    pool = KVCachePool(LAYERS, SLOTS - 1, 1, 2, 6, torch.float64, CPU)
    pool._k[:] = tensor(g, LAYERS, SLOTS, 2, 6)
    pool._v[:] = tensor(g, LAYERS, SLOTS, 2, 6)
    table = torch.tensor(g.sample(range(SLOTS), ROWS * WIDTH), dtype=torch.int32).reshape(ROWS, WIDTH)
    be = TorchAttnBackend(4, 2, 6, table, CPU)
    reqs = random_reqs(g, decode=False)
    batch = make_batch(be, reqs, "prefill")
    t = sum(r.extend_len for r in reqs)
    q, k, v = (tensor(g, t, h, 6).to(torch.float64) for h in (4, 2, 2))
    set_global_ctx(Context(1, pool, be))
    try:
        out = be.forward(q, k, v, 0, batch)
    finally:
        set_global_ctx(None)
    got = (str(out.dtype), list(out.shape))
    assert got == ("torch.float64", [t, 4, 6]), "a float64 batch: the output is float64 (q's dtype), [T, Hq, D]"


def test_like_the_engine():
    """A random prefill batch: the output equals the engine's forward on the same pool and batch."""
    g = rng()
    pool, be, reqs, batch, (q, k, v, layer), _, out = run_forward(g, 4, 2, 6, False)

    def engine_forward():
        set_global_ctx(Context(1, pool, be))
        try:
            return be.forward(q, k, v, layer, batch)
        finally:
            set_global_ctx(None)

    assert torch.allclose(out, expected(engine_forward), atol=1e-5), "the output differs from the engine's"


def run(prompts):
    with engine() as llm:
        return generate(llm, prompts, 5) + generate(llm, prompts, 3)


def test_engine_tokens():
    """The tiny model with your forward (prefills, reused prefixes, decodes): the engine's tokens."""
    prompts = hidden_prompts(3, min_len=4, max_len=12)
    assert run(prompts) == expected(run, prompts), "the tokens differ from the engine's"


def test_engine_fixed_prompts():
    """The fixed prompts: the engine's tokens."""
    assert run(PROMPT_IDS[:4]) == expected(run, PROMPT_IDS[:4]), "the tokens differ from the engine's"

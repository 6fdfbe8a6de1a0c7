"""Rule 1, "only whole pages": release offers all kv_len tokens, a last partial page included (it counts on the
cache to round down)."""


class CacheManager:
    def release(self, req):
        p = self.page_size
        kv_len = min(req.cached_len, len(req.input_ids))
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        kept = self.prefix_cache.insert(req.input_ids[:kv_len], slots[:kv_len])
        m = req.matched_len
        dup = slots[m : max(kept, m) : p] // p
        rest = slots[aligned:held:p] // p
        self.free(dup.tolist() + rest.tolist())
        self.unlock(req)

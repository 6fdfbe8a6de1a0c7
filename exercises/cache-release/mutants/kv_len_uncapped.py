"""Rule 1, "kv_len is req.cached_len (but never more than len(req.input_ids))": kv_len is cached_len uncapped, so
when cached_len passes len(input_ids) the pages between are neither offered nor freed."""


class CacheManager:
    def release(self, req):
        p = self.page_size
        kv_len = req.cached_len
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        kept = self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        m = req.matched_len
        dup = slots[m : max(kept, m) : p] // p
        rest = slots[aligned:held:p] // p
        self.free(dup.tolist() + rest.tolist())
        self.unlock(req)

"""Rule 2, "free each page exactly once": the pages are read from every slot, not one slot per page, so each
freed page goes back on the free list page_size times."""


class CacheManager:
    def release(self, req):
        p = self.page_size
        kv_len = min(req.cached_len, len(req.input_ids))
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        kept = self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        m = req.matched_len
        dup = slots[m : max(kept, m)] // p
        rest = slots[aligned:held] // p
        self.free(dup.tolist() + rest.tolist())
        self.unlock(req)

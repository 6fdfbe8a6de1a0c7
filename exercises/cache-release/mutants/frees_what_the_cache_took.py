"""release frees every page past the matched prefix, those the cache has just taken included."""


class CacheManager:
    def release(self, req):
        p = self.page_size
        kv_len = min(req.cached_len, len(req.input_ids))
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        m = req.matched_len
        self.free((slots[m:held:p] // p).tolist())
        self.unlock(req)

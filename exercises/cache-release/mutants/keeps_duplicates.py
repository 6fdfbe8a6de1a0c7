"""release never frees the pages of [matched_len, n): the duplicates of what the cache already holds are lost."""


class CacheManager:
    def release(self, req):
        p = self.page_size
        kv_len = min(req.cached_len, len(req.input_ids))
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        rest = slots[aligned:held:p] // p
        self.free(rest.tolist())
        self.unlock(req)

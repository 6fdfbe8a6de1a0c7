"""release assumes the last token of input_ids never has KV (len(input_ids) - 1): under overlap a request\nstopped at EOS had that token computed by the batch in flight, and its KV is thrown away."""


class CacheManager:
    def release(self, req):
        p = self.page_size
        kv_len = len(req.input_ids) - 1
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        kept = self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        m = req.matched_len
        dup = slots[m : max(kept, m) : p] // p
        rest = slots[aligned:held:p] // p
        self.free(dup.tolist() + rest.tolist())
        self.unlock(req)

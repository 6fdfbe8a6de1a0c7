"""The form, "self.free(pages) puts a list of page ids back": release frees a tensor of page ids, so the free
list fills with 0-d tensors instead of ints."""


class CacheManager:
    def release(self, req):
        p = self.page_size
        kv_len = min(req.cached_len, len(req.input_ids))
        held = pages_for(req.cached_len, p) * p
        slots = self.page_table[req.table_idx, :held]
        aligned = kv_len - kv_len % p
        kept = self.prefix_cache.insert(req.input_ids[:aligned], slots[:aligned])
        m = req.matched_len
        dup = slots[m : max(kept, m) : p] // p
        rest = slots[aligned:held:p] // p
        self.free(torch.cat([dup, rest]))
        self.unlock(req)

"""Rule "set req.cached_len and req.matched_len to the matched length": only matched_len is set, cached_len stays 0
(the forward would recompute the matched prefix)."""


class CacheManager:
    def match_and_lock(self, req):
        match = self.prefix_cache.match_prefix(req.input_ids[: req.prompt_len - 1])
        self.prefix_cache.lock(match.handle)
        req.cache_handle = match.handle
        req.matched_len = match.length
        self.hit_tokens += match.length
        if match.length:
            self.page_table[req.table_idx, : match.length] = match.indices

    def unlock(self, req):
        self.prefix_cache.unlock(req.cache_handle)
        req.cache_handle = None

"""Rule "when nothing matched ... keep it in req.cache_handle either way": the handle is locked and kept only on a
hit; with nothing matched req.cache_handle is left as it was (None), not the tree's root."""


class CacheManager:
    def match_and_lock(self, req):
        match = self.prefix_cache.match_prefix(req.input_ids[: req.prompt_len - 1])
        if match.length:
            self.prefix_cache.lock(match.handle)
            req.cache_handle = match.handle
        req.cached_len = req.matched_len = match.length
        self.hit_tokens += match.length
        if match.length:
            self.page_table[req.table_idx, : match.length] = match.indices

    def unlock(self, req):
        self.prefix_cache.unlock(req.cache_handle)
        req.cache_handle = None

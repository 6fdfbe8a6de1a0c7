"""Rule "lock the match's handle and keep it in req.cache_handle": the handle is locked but not kept, so unlock
has nothing to unlock and the prefix stays locked."""


class CacheManager:
    def match_and_lock(self, req):
        match = self.prefix_cache.match_prefix(req.input_ids[: req.prompt_len - 1])
        self.prefix_cache.lock(match.handle)
        req.cached_len = req.matched_len = match.length
        self.hit_tokens += match.length
        if match.length:
            self.page_table[req.table_idx, : match.length] = match.indices

    def unlock(self, req):
        self.prefix_cache.unlock(req.cache_handle)
        req.cache_handle = None

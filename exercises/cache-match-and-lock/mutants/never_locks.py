"""match_and_lock never locks the matched prefix."""


class CacheManager:
    def match_and_lock(self, req):
        match = self.prefix_cache.match_prefix(req.input_ids[: req.prompt_len - 1])
        req.cache_handle = None
        req.cached_len = req.matched_len = match.length
        self.hit_tokens += match.length
        if match.length:
            self.page_table[req.table_idx, : match.length] = match.indices

    def unlock(self, req):
        req.cache_handle = None

"""match_and_lock never writes the matched slots into the request's page-table row."""


class CacheManager:
    def match_and_lock(self, req):
        match = self.prefix_cache.match_prefix(req.input_ids[: req.prompt_len - 1])
        self.prefix_cache.lock(match.handle)
        req.cache_handle = match.handle
        req.cached_len = req.matched_len = match.length
        self.hit_tokens += match.length

    def unlock(self, req):
        self.prefix_cache.unlock(req.cache_handle)
        req.cache_handle = None

"""Rule "look up the prompt without its last token (a list of ints)": the tokens are passed as a tensor, which the
cache cannot key on (nothing ever matches)."""

import torch


class CacheManager:
    def match_and_lock(self, req):
        match = self.prefix_cache.match_prefix(torch.tensor(req.input_ids[: req.prompt_len - 1]))
        self.prefix_cache.lock(match.handle)
        req.cache_handle = match.handle
        req.cached_len = req.matched_len = match.length
        self.hit_tokens += match.length
        if match.length:
            self.page_table[req.table_idx, : match.length] = match.indices

    def unlock(self, req):
        self.prefix_cache.unlock(req.cache_handle)
        req.cache_handle = None

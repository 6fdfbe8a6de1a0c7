from __future__ import annotations

import torch

from minisgl.kvcache.base import BasePrefixCache, MatchResult
from minisgl.kvcache.naive import NaivePrefixCache
from minisgl.kvcache.pool import KVCachePool
from minisgl.kvcache.radix import RadixPrefixCache
from minisgl.utils import Registry

PREFIX_CACHES: Registry[BasePrefixCache] = Registry("cache type")
PREFIX_CACHES.register("naive")(NaivePrefixCache)
PREFIX_CACHES.register("radix")(RadixPrefixCache)


def create_prefix_cache(name: str, page_size: int, device: torch.device) -> BasePrefixCache:
    return PREFIX_CACHES.get(name)(page_size, device)


__all__ = ["BasePrefixCache", "KVCachePool", "MatchResult", "PREFIX_CACHES", "create_prefix_cache"]

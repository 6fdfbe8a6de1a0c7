""""The shared part stays locked until both have unlocked": lock sets lock_ref to 1 (a flag) instead of adding one,
so the first unlock frees a prefix another request still uses."""

class RadixPrefixCache:
    def lock(self, handle):
        node = handle
        while node is not None and node is not self._root:
            if node.lock_ref == 0:
                self._locked_pages += len(node.key) // self.page_size
            node.lock_ref = 1
            node = node.parent

    def unlock(self, handle):
        node = handle
        while node is not None and node is not self._root:
            assert node.lock_ref > 0, "unlock without lock"
            node.lock_ref -= 1
            if node.lock_ref == 0:
                self._locked_pages -= len(node.key) // self.page_size
            node = node.parent

    @property
    def evictable_pages(self):
        return self._total_pages - self._locked_pages

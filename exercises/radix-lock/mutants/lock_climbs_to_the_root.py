"""lock, "up to, but not including, the root ... locking the root changes nothing": lock climbs to the root too
(its key is empty, so no pages are counted, but its lock_ref grows)."""

class RadixPrefixCache:
    def lock(self, handle):
        node = handle
        while node is not None:
            if node.lock_ref == 0:
                self._locked_pages += len(node.key) // self.page_size
            node.lock_ref += 1
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

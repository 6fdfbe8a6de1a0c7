"""lock and unlock touch only the handle node, not the nodes above it."""


class RadixPrefixCache:
    def lock(self, handle):
        node = handle
        if node is not None and node is not self._root:
            if node.lock_ref == 0:
                self._locked_pages += len(node.key) // self.page_size
            node.lock_ref += 1

    def unlock(self, handle):
        node = handle
        if node is not None and node is not self._root:
            assert node.lock_ref > 0, "unlock without lock"
            node.lock_ref -= 1
            if node.lock_ref == 0:
                self._locked_pages -= len(node.key) // self.page_size

    @property
    def evictable_pages(self):
        return self._total_pages - self._locked_pages

"""lock stops climbing at a node that is already locked (as if the nodes above were counted already)."""


class RadixPrefixCache:
    def lock(self, handle):
        node = handle
        while node is not None and node is not self._root:
            already = node.lock_ref > 0
            if not already:
                self._locked_pages += len(node.key) // self.page_size
            node.lock_ref += 1
            if already:
                break
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

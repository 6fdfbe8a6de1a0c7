""""keep self._total_pages up to date": the evicted node's tokens are taken off it, not its pages."""

class RadixPrefixCache:
    def evict(self, num_pages):
        leaves = [(n.last_access, id(n), n) for n in self._nodes() if not n.children and n.lock_ref == 0]
        heapq.heapify(leaves)
        freed = []
        while leaves and len(freed) < num_pages:
            _, _, node = heapq.heappop(leaves)
            parent = node.parent
            del parent.children[self._first(node.key, 0)]
            freed.extend((node.value[:: self.page_size] // self.page_size).tolist())
            self._total_pages -= len(node.key)
            if parent is not self._root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(leaves, (parent.last_access, id(parent), parent))
        return freed

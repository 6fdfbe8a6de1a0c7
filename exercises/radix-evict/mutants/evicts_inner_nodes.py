""""Only a leaf (no children) ... can be evicted": every unlocked node is a candidate, a parent with children
included (its children are cut off the tree with it)."""

class RadixPrefixCache:
    def evict(self, num_pages):
        leaves = [(n.last_access, id(n), n) for n in self._nodes() if n.lock_ref == 0]
        heapq.heapify(leaves)
        freed = []
        while leaves and len(freed) < num_pages:
            _, _, node = heapq.heappop(leaves)
            if self._first(node.key, 0) not in node.parent.children or node.parent.children[self._first(node.key, 0)] is not node:
                continue
            parent = node.parent
            del parent.children[self._first(node.key, 0)]
            freed.extend((node.value[:: self.page_size] // self.page_size).tolist())
            self._total_pages -= len(node.key) // self.page_size
            if parent is not self._root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(leaves, (parent.last_access, id(parent), parent))
        return freed

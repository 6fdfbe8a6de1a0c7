""""evict(0) returns []": the loop evicts a leaf before it checks the count (a do-while), so evict(0) drops one."""

class RadixPrefixCache:
    def evict(self, num_pages):
        leaves = [(n.last_access, id(n), n) for n in self._nodes() if not n.children and n.lock_ref == 0]
        heapq.heapify(leaves)
        freed = []
        while leaves:
            _, _, node = heapq.heappop(leaves)
            parent = node.parent
            del parent.children[self._first(node.key, 0)]
            freed.extend((node.value[:: self.page_size] // self.page_size).tolist())
            self._total_pages -= len(node.key) // self.page_size
            if parent is not self._root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(leaves, (parent.last_access, id(parent), parent))
            if len(freed) >= num_pages:
                break
        return freed

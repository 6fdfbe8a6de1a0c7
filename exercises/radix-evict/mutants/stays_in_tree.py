"""evict frees the pages but never removes the node from its parent."""


class RadixPrefixCache:
    def evict(self, num_pages):
        leaves = [(n.last_access, id(n), n) for n in self._nodes() if not n.children and n.lock_ref == 0]
        heapq.heapify(leaves)
        freed = []
        while leaves and len(freed) < num_pages:
            _, _, node = heapq.heappop(leaves)
            freed.extend((node.value[:: self.page_size] // self.page_size).tolist())
            self._total_pages -= len(node.key) // self.page_size
        return freed

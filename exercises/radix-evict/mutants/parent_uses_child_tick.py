""""it then becomes a candidate too, competing with the others by its own last_access": the parent goes on the heap with the evicted child's tick."""

from __future__ import annotations

import heapq


class RadixPrefixCache:
    def evict(self, num_pages: int) -> list[int]:
        leaves = [(n.last_access, id(n), n) for n in self._nodes() if not n.children and n.lock_ref == 0]
        heapq.heapify(leaves)
        freed: list[int] = []
        while leaves and len(freed) < num_pages:
            tick, _, node = heapq.heappop(leaves)
            parent = node.parent
            assert parent is not None
            del parent.children[self._first(node.key, 0)]
            freed.extend((node.value[:: self.page_size] // self.page_size).tolist())
            self._total_pages -= len(node.key) // self.page_size
            if parent is not self._root and not parent.children and parent.lock_ref == 0:
                heapq.heappush(leaves, (tick, id(parent), parent))
        return freed

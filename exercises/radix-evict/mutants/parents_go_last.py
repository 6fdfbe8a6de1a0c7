""""it then becomes a candidate too, competing with the others by its own last_access": the leaves are sorted once,
and a parent that becomes a leaf is queued after all of them."""

class RadixPrefixCache:
    def evict(self, num_pages):
        leaves = [(n.last_access, id(n), n) for n in self._nodes() if not n.children and n.lock_ref == 0]
        leaves.sort(key=lambda t: t[:2])
        freed = []
        while leaves and len(freed) < num_pages:
            _, _, node = leaves.pop(0)
            parent = node.parent
            del parent.children[self._first(node.key, 0)]
            freed.extend((node.value[:: self.page_size] // self.page_size).tolist())
            self._total_pages -= len(node.key) // self.page_size
            if parent is not self._root and not parent.children and parent.lock_ref == 0:
                leaves.append((parent.last_access, id(parent), parent))
        return freed

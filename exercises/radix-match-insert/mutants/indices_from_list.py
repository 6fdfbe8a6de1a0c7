"""match_prefix, "indices the int32 slots": the slots are gathered into a list and made a tensor again (int64)."""

class RadixPrefixCache:
    def _split(self, node, at):
        upper = _Node(node.key[:at], node.value[:at], node.parent)
        upper.lock_ref, upper.last_access = node.lock_ref, node.last_access
        node.parent.children[self._first(node.key, 0)] = upper
        node.key, node.value, node.parent = node.key[at:], node.value[at:], upper
        upper.children[self._first(node.key, 0)] = node
        return upper

    def _walk(self, tokens, end):
        node, pos, values = self._root, 0, []
        now = next(self._clock)
        while pos < end:
            child = node.children.get(self._first(tokens, pos))
            if child is None:
                break
            n = self._common(child.key, tokens, pos, end)
            if n == 0:
                break
            if n < len(child.key):
                child = self._split(child, n)
            child.last_access = now
            values.append(child.value)
            node, pos = child, pos + n
        return node, pos, values

    def match_prefix(self, tokens):
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, values = self._walk(tokens, end)
        flat = [s for v in values for s in v.tolist()]
        return MatchResult(pos, torch.tensor(flat) if flat else self._root.value, node)

    def insert(self, tokens, indices):
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, _ = self._walk(tokens, end)
        if pos < end:
            leaf = _Node(list(tokens[pos:end]), indices[pos:end].clone(), node)
            leaf.last_access = next(self._clock)
            node.children[self._first(leaf.key, 0)] = leaf
            self._total_pages += (end - pos) // self.page_size
        return pos

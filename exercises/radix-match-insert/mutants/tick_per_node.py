"""_walk, "one new tick (drawn once, the same for the whole walk)": each node passed gets a tick of its own."""

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
            child.last_access = next(self._clock)
            values.append(child.value)
            node, pos = child, pos + n
        return node, pos, values

    def match_prefix(self, tokens):
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, values = self._walk(tokens, end)
        return MatchResult(pos, torch.cat(values) if values else self._root.value, node)

    def insert(self, tokens, indices):
        end = len(tokens) - len(tokens) % self.page_size
        node, pos, _ = self._walk(tokens, end)
        if pos < end:
            leaf = _Node(list(tokens[pos:end]), indices[pos:end].clone(), node)
            leaf.last_access = next(self._clock)
            node.children[self._first(leaf.key, 0)] = leaf
            self._total_pages += (end - pos) // self.page_size
        return pos

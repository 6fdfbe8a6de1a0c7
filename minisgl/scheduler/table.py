from __future__ import annotations


class TableManager:
    """Hands out page-table rows (one per running request); the last row belongs to the dummy request."""

    def __init__(self, max_running_req: int) -> None:
        self._free = list(range(max_running_req - 1, -1, -1))
        self.size = max_running_req

    @property
    def available(self) -> int:
        return len(self._free)

    def allocate(self) -> int:
        return self._free.pop()

    def free(self, row: int) -> None:
        assert 0 <= row < self.size and row not in self._free, f"row {row} freed twice"
        self._free.append(row)

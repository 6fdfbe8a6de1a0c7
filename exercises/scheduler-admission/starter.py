"""Exercise scheduler-admission: PrefillManager._reserved_pages and _try_admit.

Your code runs as if written in minisgl/scheduler/prefill.py (its imports and globals are
available: pages_for, Req, ...). The class is the engine's: write the two methods inside this
stub of the same name.
"""

from __future__ import annotations

from minisgl.core import Req
from minisgl.scheduler.cache import pages_for


class PrefillManager:
    def _reserved_pages(self) -> int:
        """Pages that admitted requests may still allocate, up to their max length."""
        raise NotImplementedError("write _reserved_pages")

    def _try_admit(self, req: Req) -> bool:
        """Admit req (a page-table row, its cached prefix locked, its prompt written) if the pages it may
        still need fit next to those reserved by the admitted requests; else undo everything, return False."""
        raise NotImplementedError("write _try_admit")

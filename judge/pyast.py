"""``ast.parse`` behind one process-wide lock.

CPython 3.11 before 3.11.9 fails with "SystemError: AST constructor recursion depth mismatch" when two threads
build AST objects at once (python/cpython#106905); the site parses exercises' tests and submissions in request
threads, so every parse of ours goes through here. Pure standard library.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.RLock()  # re-entrant: a finalizer run by the GC inside a parse may parse too


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename, mode)  # type: ignore[return-value]

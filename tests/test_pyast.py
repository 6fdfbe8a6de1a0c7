"""judge.pyast: ast.parse from many threads at once (the site parses in request threads)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from judge import pyast

SOURCE = (Path(__file__).resolve().parent.parent / "exercises" / "graph-capture-loop" / "tests.py").read_text()


class Finalized:
    def __del__(self):
        sum(range(50))  # Python code run by the GC while a parse builds its AST objects: a thread switch


def test_parses_from_four_threads_with_the_gc_running_finalizers():
    """CPython 3.11 before 3.11.9 raises "SystemError: AST constructor recursion depth mismatch" here with a bare
    ast.parse (python/cpython#106905; seen on the site under load)."""
    errors: list[BaseException] = []

    def parse_many():
        for _ in range(40):
            for _ in range(200):
                garbage = Finalized()
                garbage.me = garbage  # a cycle: only the GC frees it, at any allocation
            try:
                pyast.parse(SOURCE, "tests.py")
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
                return

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=parse_many) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []

"""Interrupting Python in Pyodide loses no signal. Python's check reads the interrupt word and then writes 0, so with
the plain word of Pyodide's docs a signal stored between the two is lost, and the word reads 0 as if Python had taken
it (the supervisor then waited two graces and restarted the worker: the other tests of the run were not run; about 2
interrupts in 100 of a spinning loop on an idle machine). core.mjs's interruptWord clears the word only if it still
holds what was read (tests/browser/interrupt_cases.mjs: that interleaving, and Pyodide under Node)."""

from __future__ import annotations

import json
import shutil
import subprocess

from browser.build import cache_dir
from tests.browser.judge_browser import REPO
from tests.support import need

INTERRUPTS = 1500


def test_no_interrupt_is_lost_where_the_plain_word_loses_some(toy_site):
    need(shutil.which("node") is not None, "node is not installed")
    pyodide = cache_dir() / "npm" / "node_modules" / "pyodide" / "pyodide.mjs"  # the toy site's build put it there
    out = subprocess.run(["node", str(REPO / "tests/browser/interrupt_cases.mjs"), str(pyodide), str(INTERRUPTS)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = {(r["case"], r["view"]): r for r in map(json.loads, out.stdout.splitlines())}
    # a signal stored between the check's read and its write: the plain word loses it, interruptWord keeps it
    assert got["between", "plain"] | {"read": 0, "kept": 0} == got["between", "plain"], got
    assert got["between", "interruptWord"] | {"read": 0, "kept": 2, "taken": 2, "after": 0} == \
        got["between", "interruptWord"], "kept for the next check; one that was read is cleared"
    looped = got["pyodide", "interruptWord"]
    assert looped | {"interrupts": INTERRUPTS, "lost": 0} == looped, got

"""The hostile suite's submissions: each wants `accepted` without doing the work, or wants to harm the
machine. Every one is a wrong `make_graph_bs_list` (tests/fixtures/hostile), so `accepted` is always a
forgery. Each says what it must get in local mode and in trusted mode (sets of allowed statuses).

Local mode promises less (docs/judge.md): the learner owns the machine, so code that attacks the judge
itself may fool it there (`LOCAL_FORGEABLE`); it must still never be an internal error, never leave a
process running, and never run without its asserts.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

SIGNATURE = "def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):\n"
WRONG = "return [1, 2, 4]"  # wrong for almost every input
FAIL = {"wrong_answer", "runtime_error", "timeout", "compile_error"}  # anything but accepted / internal_error
LOCAL_FORGEABLE = FAIL | {"accepted"}
TAG = "4242.171"  # in the command line of processes the submissions leave behind


def sub(body: str, top: str = "") -> str:
    return textwrap.dedent(top) + SIGNATURE + textwrap.indent(textwrap.dedent(body), "    ")


@dataclass
class Case:
    name: str
    kind: str  # resources | leftovers | forgery | patching | theft | outside | network | blame
    source: str
    local: set[str]
    trusted: set[str]
    env: dict | None = None  # extra environment of the judging (local mode)


FAKE = ('{"event": "verdict", "verdict": {"status": "accepted", "exercise": "hostile-bs-list", "passed": 3, '
        '"total": 3, "tests": [], "version": 2}, "retire": false}')

CASES = [
    # -- resource abuse -------------------------------------------------------------------------
    Case("endless_loop", "resources", sub("while True:\n    pass\n"), {"timeout"}, {"timeout"}),
    Case("endless_loop_at_load", "resources", "while True:\n    pass\n" + sub(WRONG), {"timeout"}, {"compile_error"}),
    Case("sleep_forever", "resources", sub("import time\ntime.sleep(10**6)\n"), {"timeout"}, {"compile_error"}),
    Case("memory_bomb_python", "resources", sub("x = bytearray(50 * 2**30)\n" + WRONG), {"runtime_error"},
         {"runtime_error"}),
    Case("memory_bomb_torch", "resources",
         sub("x = torch.empty(50 * 2**30, dtype=torch.uint8)\nx.fill_(1)\n" + WRONG, "import torch\n"),
         {"runtime_error"}, {"runtime_error"}),
    Case("memory_bomb_list", "resources", sub("x = [0] * (40 * 2**30)\n" + WRONG), {"runtime_error"},
         {"runtime_error"}),
    Case("recursion_bomb", "resources", sub("return make_graph_bs_list(cuda_graph_bs, 1, is_cuda, free_memory)"),
         {"runtime_error"}, {"runtime_error"}),
    Case("fork_bomb", "resources", sub(f"""
        import os, time
        for _ in range(60):
            try:
                if os.fork() == 0:
                    os.execv("/bin/sleep", ["sleep", "{TAG}"])
            except OSError:
                break
        {WRONG}
    """), FAIL, {"compile_error"}),
    Case("disk_fill", "resources", sub(f"""
        with open("fill.bin", "wb") as f:
            for _ in range(400):
                f.write(b"x" * 2**20)
        {WRONG}
    """), {"runtime_error"}, {"compile_error"}),
    Case("output_flood", "resources", sub("for i in range(200000):\n    print('spam' * 20)\n" + WRONG),
         {"wrong_answer"}, {"wrong_answer"}),
    Case("busy_threads", "resources", sub(f"""
        import threading
        for _ in range(4):
            threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()
        {WRONG}
    """), FAIL, {"compile_error"}),
    # -- leftovers: processes and threads that outlive the verdict --------------------------------
    Case("child_left_sleeping", "leftovers", sub(f"""
        import subprocess
        subprocess.Popen(["sleep", "{TAG}"])
        {WRONG}
    """), FAIL, {"compile_error"}),
    Case("daemon_double_fork", "leftovers", sub(f"""
        import os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sleep", ["sleep", "{TAG}"], {{}})  # no environment: no marker to find it by
            os._exit(0)
        {WRONG}
    """), FAIL, {"compile_error"}),
    Case("thread_left_running", "leftovers", sub(f"""
        import threading, time
        threading.Thread(target=lambda: time.sleep(10**6)).start()
        {WRONG}
    """), FAIL, {"compile_error"}),
    Case("kill_the_judge", "leftovers", sub("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + WRONG),
         FAIL, {"compile_error"}),
    # -- forged verdicts ------------------------------------------------------------------------
    Case("print_fake_verdict", "forgery", sub(f"print({FAKE!r})\n{WRONG}"), {"wrong_answer"}, {"wrong_answer"}),
    Case("write_fake_verdict_to_every_fd", "forgery", sub(f"""
        import os
        for fd in range(3, 64):
            try:
                os.write(fd, ({FAKE!r} + "\\n").encode())
            except OSError:
                pass
        os._exit(0)
    """), LOCAL_FORGEABLE, {"compile_error"}),
    Case("exit_zero_at_load", "forgery", "import os\nos._exit(0)\n" + sub(WRONG), {"runtime_error"},
         {"compile_error"}),
    Case("system_exit", "forgery", sub("raise SystemExit(0)"), {"runtime_error"}, {"runtime_error"}),
    Case("close_the_channel", "forgery", sub("import os\nos.closerange(3, 256)\n" + WRONG), FAIL,
         {"compile_error"}),
    Case("always_equal_object", "forgery", sub("return AlwaysEqual()", """
        class AlwaysEqual:
            def __eq__(self, other):
                return True
    """), FAIL, {"compile_error"}),
    Case("list_subclass_lies", "forgery", sub("return Liar([1, 2, 4])", """
        class Liar(list):
            def __eq__(self, other):
                return True
            __ne__ = lambda self, other: False
    """), {"wrong_answer"}, {"compile_error"}),
    Case("hardcoded_visible_example", "forgery",
         sub("if (cuda_graph_bs, cuda_graph_max_bs) == (None, 20):\n    return [1, 2, 4, 8, 16]\n" + WRONG),
         {"wrong_answer"}, {"wrong_answer"}),
    # -- patching the judge, the builtins, the tests --------------------------------------------
    Case("patch_harness_classify", "patching", """
import judge.harness as h
h.classify = lambda *a, **k: ("pass", "")
""" + sub(WRONG), LOCAL_FORGEABLE, {"compile_error"}),
    Case("patch_checks_compare", "patching", """
import judge.checks as c
c.compare = lambda *a, **k: True
""" + sub(WRONG), LOCAL_FORGEABLE, {"compile_error"}),
    Case("patch_builtins_compile", "patching", """
import builtins
builtins.compile = lambda *a, **k: compile("pass", "x", "exec")
""" + sub(WRONG), LOCAL_FORGEABLE, {"compile_error"}),
    Case("patch_json_dumps", "patching", """
import json
json.dumps = lambda *a, **k: '{"event": "verdict", "verdict": {"status": "accepted"}}'
""" + sub(WRONG), LOCAL_FORGEABLE, {"compile_error"}),
    Case("patch_tests_code_via_gc", "patching", sub("""
        import gc
        for o in gc.get_objects():
            if type(o).__name__ == "function" and getattr(o, "__name__", "").startswith("test_"):
                o.__code__ = (lambda: None).__code__
        return [1, 2, 4]
    """), LOCAL_FORGEABLE, {"compile_error"}),
    Case("patch_torch_equal", "patching", sub(WRONG, "import torch\ntorch.equal = lambda a, b: True\n"), FAIL,
         {"compile_error"}),
    Case("patch_engine_class", "patching", sub("GraphRunner.capture = None\n" + WRONG), FAIL, {"compile_error"}),
    Case("setattr_on_a_class", "patching", sub("setattr(GraphRunner, 'replay', None)\n" + WRONG), FAIL,
         {"runtime_error"}),
    Case("dunder_walk_to_subclasses", "patching", sub("return ().__class__.__base__.__subclasses__()"),
         FAIL, {"compile_error"}),
    Case("computed_dunder_getattr", "patching",
         sub("g = getattr(make_graph_bs_list, '__glo' + 'bals__')\nreturn g['x']"), FAIL, {"runtime_error"}),
    Case("format_string_escape", "patching", sub("s = '{0.__class__.__mro__}'.format(1)\n" + WRONG),
         {"wrong_answer"}, {"compile_error"}),
    Case("builtins_through_a_name", "patching", sub("__builtins__['open']('/etc/hostname')\n" + WRONG), FAIL,
         {"compile_error"}),
    Case("lower_recursion_limit", "blame", sub("import sys\nsys.setrecursionlimit(25)\n" + WRONG),
         {"wrong_answer", "runtime_error"}, {"compile_error"}),
    # -- reference theft ------------------------------------------------------------------------
    Case("delegate_to_original", "theft", sub("return original('minisgl.engine.graph:make_graph_bs_list')(\n"
                                              "    cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory)",
                                              "from judge.testing import original\n"),
         LOCAL_FORGEABLE, {"compile_error"}),
    Case("delegate_to_seeded_global", "theft", sub(
        "return minisgl.engine.graph.__dict__['make_graph_bs_list'](cuda_graph_bs, cuda_graph_max_bs, is_cuda, "
        "free_memory)", "import minisgl.engine.graph\n"), FAIL, {"compile_error"}),
    Case("delegate_through_binding_undo_log", "theft", sub("""
        import gc
        for o in gc.get_objects():
            if type(o).__name__ == "Binding":
                for where, name, old, existed in o._undo:
                    if name == "make_graph_bs_list":
                        return old(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory)
        return [1, 2, 4]
    """), LOCAL_FORGEABLE, {"compile_error"}),
    Case("read_the_engine_source", "theft", sub("""
        import minisgl.engine.graph as g
        src = open(g.__file__).read()
        ns = {}
        body = src[src.index("def make_graph_bs_list"):src.index("@dataclass")]
        exec(body.replace("_BIG_DEVICE_BYTES", str(80 << 30)), ns)
        return ns["make_graph_bs_list"](cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory)
    """), LOCAL_FORGEABLE, {"compile_error"}),
    Case("import_module_by_name", "theft", sub("import importlib\nm = importlib.import_module('os')\n" + WRONG),
         FAIL, {"compile_error"}),
    Case("engine_module_os", "theft", sub("minisgl.engine.graph.os.system('true')\n" + WRONG,
                                          "import minisgl.engine.graph\n"), FAIL, {"compile_error"}),
    # -- reading and writing outside the job ------------------------------------------------------
    Case("read_etc_passwd", "outside", sub("print(open('/etc/passwd').read())\n" + WRONG), {"wrong_answer"},
         {"compile_error"}),
    Case("print_the_environment", "outside", sub("import os\nprint(dict(os.environ))\n" + WRONG), {"wrong_answer"},
         {"compile_error"}),
    Case("rewrite_the_tests", "outside", sub("""
        import glob
        for p in glob.glob("/**/hostile-bs-list/tests.py", recursive=True):
            try:
                open(p, "w").write("def test_example_anything():\\n    pass\\n")
            except OSError:
                pass
        return [1, 2, 4]
    """), FAIL, {"compile_error"}),
    Case("torch_from_file", "outside", sub("t = torch.from_file('/etc/passwd', size=10)\n" + WRONG,
                                           "import torch\n"), FAIL, {"compile_error"}),
    Case("torch_load_computed", "outside", sub("f = getattr(torch, 'lo' + 'ad')\n" + WRONG, "import torch\n"),
         FAIL, {"runtime_error"}),
    # -- the network ----------------------------------------------------------------------------
    Case("connect_localhost", "network", sub("""
        import socket
        s = socket.socket()
        s.settimeout(1)
        try:
            s.connect(("127.0.0.1", 22))
        except OSError:
            pass
        return [1, 2, 4]
    """), {"wrong_answer"}, {"compile_error"}),
    Case("urllib_request", "network", sub("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:1')\n"),
         FAIL, {"compile_error"}),
    # -- failures of the learner's that must never be blamed on the judge -------------------------
    Case("exception_whose_str_raises", "blame", sub("raise Weird()", """
        class Weird(Exception):
            def __str__(self):
                raise RuntimeError("no")
    """), {"runtime_error"}, {"compile_error"}),
    Case("raise_keyboard_interrupt", "blame", sub("raise KeyboardInterrupt"), {"runtime_error"}, {"runtime_error"}),
    Case("syntax_error", "blame", sub("return [1, 2,"), {"compile_error"}, {"compile_error"}),
    Case("null_byte", "blame", sub("return 1\x00"), {"compile_error"}, {"compile_error"}),
    # -- the environment the learner's shell gives the judge -----------------------------------------
    Case("asserts_under_pythonoptimize", "blame", sub(WRONG), {"wrong_answer"}, {"wrong_answer"},
         env={"PYTHONOPTIMIZE": "2"}),
]

"""The trusted-mode screen (judge/screen.py) on its own, without running anything: Triton kernels for an exercise
that lists triton in ``trusted_imports`` (what a kernel needs, and nothing of triton's compiler, runtime or knobs),
names bound to triton never rebound, and annotations screened like any other expression. The judgings of whole
hostile submissions are in tests/test_hostile.py."""

from __future__ import annotations

import textwrap

import pytest

from judge.screen import restricted_builtins, screen

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _store(k_ptr, cache_ptr, loc_ptr, ROW: tl.constexpr, BLOCK: tl.constexpr):
    token = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = cols < ROW
    slot = tl.load(loc_ptr + token).to(tl.int64)
    x = tl.load(k_ptr + token.to(tl.int64) * ROW + cols, mask=inside)
    tl.store(cache_ptr + slot * ROW + cols, tl.math.exp(x * 0.0) * x, mask=inside)


def store(cache: torch.Tensor, k: torch.Tensor, loc: torch.Tensor) -> None:
    row = cache[0].numel()
    block = triton.next_power_of_2(row)
    _store[(loc.numel(), triton.cdiv(row, block))](k, cache, loc, ROW=row, BLOCK=block)
'''


def refusals(source: str, triton: bool = True) -> list[str]:
    return [r.why for r in screen(textwrap.dedent(source), "submission.py", set(), ("triton",) if triton else ())]


def test_a_triton_kernel_passes_where_the_exercise_lists_triton():
    assert refusals(KERNEL) == []
    assert refusals(KERNEL.replace("import triton.language as tl", "from triton import language as tl")) == []
    bare_jit = KERNEL.replace("@triton.jit", "@jit").replace("import triton\n", "from triton import jit\n")
    assert refusals(bare_jit) == []


def test_triton_is_refused_where_the_exercise_does_not_list_it():
    got = refusals(KERNEL, triton=False)
    assert any("importing 'triton'" in w for w in got) and any("triton.language" in w for w in got), got


@pytest.mark.parametrize("code", [
    "import triton\ndef f():\n    return triton.runtime\n",
    "import triton\ndef f():\n    triton.knobs.cache.dir = 'x'\n",
    "import triton\ndef f(x):\n    return triton.compile(x)\n",
    "import triton\ndef f():\n    return triton._C\n",
    "import triton\ndef f():\n    return triton.testing.do_bench\n",
    "import triton\n@triton.autotune(configs=[], key=[])\ndef f():\n    pass\n",
    "import triton.language as tl\ndef f():\n    return tl.core\n",
    "import triton.language as tl\ndef f(x):\n    return tl.inline_asm_elementwise('', '', [x], tl.int32, True, 1)\n",
    "import triton.language as tl\ndef f():\n    return tl.extra.libdevice\n",
    "import triton.language as tl\ndef f():\n    return tl._semantic\n",
    "import triton\ndef f():\n    return triton.language.core\n",
    "from triton import knobs\n",
    "from triton import runtime as rt\n",
    "from triton.language import core\n",
    "import triton.runtime\n",
    "import triton.language.core as c\n",
    "import triton.compiler as tl\n",
])
def test_what_a_kernel_does_not_need_is_refused(code):
    assert refusals(code), code


@pytest.mark.parametrize("code", [
    # each would make `tl.load` (allowed as Triton's) torch's: the name must stay what its import made it
    "import torch\nimport triton.language as tl\ndef f(x):\n    tl = torch\n    return tl.load(x)\n",
    "import triton.language as tl\ndef f(tl, x):\n    return tl.load(x)\n",
    "import triton.language as tl\ndef f(x):\n    for tl in x:\n        pass\n",
    "import triton.language as tl\ndef f(x):\n    return [tl.load(x) for tl in x]\n",
    "import triton.language as tl\ndef f(x):\n    try:\n        pass\n    except Exception as tl:\n        pass\n",
    "import triton.language as tl\ndef f(x):\n    return (lambda tl: tl.load(x))(x)\n",
    "import triton.language as tl\ndef tl():\n    pass\n",
    "import triton.language as tl\nclass tl:\n    pass\n",
    "import triton.language as tl\ndef f(x):\n    import torch as tl\n    return tl.load(x)\n",
    "import triton.language as tl\ndef f(x):\n    if (tl := x):\n        pass\n",
    "import triton.language as tl\ndef f(x):\n    del tl\n",
])
def test_a_triton_name_is_never_rebound(code):
    assert refusals(code), code


@pytest.mark.parametrize("code", [
    "import torch as triton\n@triton.jit\ndef f():\n    pass\n",  # torch.jit under triton's name
    "import torch\ndef f(x):\n    triton = torch\n    return triton.jit\n",  # a local named triton is not triton
    "import triton\nimport torch\ndef f(x):\n    return torch.load(x)\n",  # torch's load stays refused
])
def test_only_triton_itself_gets_triton_rules(code):
    assert refusals(code), code


@pytest.mark.parametrize("code", [
    "import torch\ndef f(x: torch.utils.data.get_worker_info()) -> int:\n    return 1\n",
    "import torch\ndef f(x) -> torch.ops.load_library('x.so'):\n    return 1\n",
    "import torch\ndef f(*, x: torch.hub.load('a', 'b')):\n    return 1\n",
    "import torch\ndef f(*args: torch.save(1, 'x')):\n    return 1\n",
    "g = lambda x=open('/etc/passwd'): x\n",
])
def test_annotations_and_defaults_are_screened(code):
    # evaluated when the function is defined: code that runs as the file loads
    assert refusals(code, triton=False), code


def test_getattr_with_a_computed_name_keeps_triton_rules():
    triton = pytest.importorskip("triton")
    import triton.language as tl

    b = restricted_builtins(__import__, ("triton",))
    assert b["getattr"](triton, "cd" + "iv") is triton.cdiv
    assert b["getattr"](tl, "ara" + "nge") is tl.arange
    for module, name in ((triton, "run" + "time"), (triton, "kno" + "bs"), (tl, "co" + "re"),
                         (tl, "inline_asm_" + "elementwise")):
        with pytest.raises(AttributeError, match="not allowed"):
            b["getattr"](module, name)

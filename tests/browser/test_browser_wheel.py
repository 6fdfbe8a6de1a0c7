"""`pip wheel browser/compat` builds one pure-Python wheel holding `torch` and `safetensors` (the layer and the reader),
and the wheel alone is enough: unpacked into an empty folder, the browser's Python imports and runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from tests.browser.browser_env import LAYER, MISSING_PYTHON, browser_python
from tests.support import need

PROBE = """
import sys; sys.path.insert(0, sys.argv[1])
import torch, safetensors
assert torch.__file__.startswith(sys.argv[1]) and safetensors.__file__.startswith(sys.argv[1])
t = torch.arange(6, dtype=torch.int32).view(2, 3)
t[0] += 10
print(t.tolist(), torch.nn.functional.silu(torch.tensor([0.0])).tolist(), torch.cuda.is_available())
"""


def test_one_pure_python_wheel(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(LAYER, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                        str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    wheels = list((tmp_path / "dist").glob("*.whl"))
    assert [w.name for w in wheels] == ["minisgl_browser_shims-0.1.0-py3-none-any.whl"]
    with zipfile.ZipFile(wheels[0]) as z:
        names = z.namelist()
        tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
        assert tops == {"torch", "safetensors"}, tops
        assert "torch/nn/functional.py" in names and all(n.endswith((".py", "METADATA", "WHEEL", "RECORD", ".txt"))
                                                          for n in names)
        z.extractall(tmp_path / "site")
    need(browser_python() is not None, MISSING_PYTHON)
    r = subprocess.run([browser_python(), "-c", PROBE, str(tmp_path / "site")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[[10,", "11,", "12],", "[3,", "4,", "5]]", "[0.0]", "False"]

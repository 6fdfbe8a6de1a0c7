"""Where the browser's Python pieces are, and how the tests reach them.

The layer is loaded in this process under another name (``numpy_torch``) beside real torch; the numpy 2.0.2 side
runs in a Python 3.12 venv (``make browser-venv``: ``.venv-browser``, or ``$MINISGL_BROWSER_PYTHON``) where real
torch does not exist and ``import torch`` is the layer."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "browser" / "compat"
HERE = Path(__file__).resolve().parent
BROWSER_NUMPY = "2.0.2"  # Pyodide 0.27.7's


def load_package(name: str, folder: Path) -> Any:
    """Import the package in `folder` under `name` (its imports are relative, so any name works)."""
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_layer(name: str = "numpy_torch") -> Any:
    return sys.modules.get(name) or load_package(name, LAYER / "torch")


def load_reader(name: str = "numpy_safetensors", torch_name: str = "numpy_torch") -> Any:
    load_layer(torch_name)
    reader = sys.modules.get(name) or load_package(name, LAYER / "safetensors")
    reader.TORCH = torch_name
    return reader


def browser_python() -> str | None:
    path = os.environ.get("MINISGL_BROWSER_PYTHON") or str(ROOT / ".venv-browser" / "bin" / "python")
    return path if os.path.isfile(path) and _numpy_version(path) == BROWSER_NUMPY else None


@functools.cache
def _numpy_version(python: str) -> str | None:
    r = subprocess.run([python, "-c", "import numpy; print(numpy.__version__)"], capture_output=True, text=True,
                       timeout=60)
    return r.stdout.strip() if r.returncode == 0 else None


MISSING_PYTHON = (f"the browser's Python (3.12 with numpy {BROWSER_NUMPY}) is missing: run `make browser-venv` "
                  "(or set MINISGL_BROWSER_PYTHON)")


def run_browser_python(script: str, *args: str, timeout: float = 300) -> Any:
    """Run a script of tests/browser in the browser's Python; it prints one JSON document."""
    python = browser_python()
    assert python, MISSING_PYTHON
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    r = subprocess.run([python, str(HERE / script), *args], capture_output=True, text=True, timeout=timeout, env=env,
                       cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"{script} failed in the browser's Python ({r.returncode}):\n{r.stderr[-4000:]}")
    return json.loads(r.stdout)

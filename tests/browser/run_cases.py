"""Run every conformance case with `import torch` being the browser's layer; print the plain results as JSON.

    python tests/browser/run_cases.py [case ...]    (in the Python 3.12 + numpy 2.0.2 venv: no real torch there)
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
LAYER = os.path.join(ROOT, "browser", "compat")
sys.path[:0] = [LAYER, ROOT]  # `torch` is the layer; the helpers are tests.browser.*

import numpy  # noqa: E402
import torch  # noqa: E402 - the layer

from tests.browser.browser_conformance import run_all  # noqa: E402

assert os.path.realpath(torch.__file__).startswith(LAYER), f"import torch gave {torch.__file__}, not the layer"
json.dump({"numpy": numpy.__version__, "python": sys.version.split()[0],
           "results": run_all(torch, sys.argv[1:] or None)}, sys.stdout)

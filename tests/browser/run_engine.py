"""The engine and the judge on the browser's torch (Python 3.12, numpy 2.0.2, no real torch): prints JSON.

    .venv-browser/bin/python tests/browser/run_engine.py
"""

import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
LAYER = os.path.join(ROOT, "browser", "compat")
sys.path[:0] = [LAYER, ROOT]  # `torch` is the layer; the helpers are tests.browser.*

import numpy  # noqa: E402
import safetensors  # noqa: E402 - the reader
import torch  # noqa: E402 - the layer

from tests.browser import browser_engine  # noqa: E402

assert os.path.realpath(torch.__file__).startswith(LAYER), f"import torch gave {torch.__file__}, not the layer"
assert os.path.realpath(safetensors.__file__).startswith(LAYER), safetensors.__file__
assert importlib.util.find_spec("torch._C") is None, "real torch is importable here"

t0 = time.perf_counter()
engine = browser_engine.engine_tokens()
sampled = browser_engine.sampled_tokens()
seeded = browser_engine.seeded_tokens()
chunked = browser_engine.chunked_tokens()
t1 = time.perf_counter()
json.dump({"numpy": numpy.__version__, "python": sys.version.split()[0], "torch": torch.__version__,
           "engine": engine, "sampled": sampled, "seeded": seeded, "chunked": chunked,
           "seconds": round(t1 - t0, 2)}, sys.stdout)

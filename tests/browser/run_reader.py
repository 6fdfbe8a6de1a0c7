"""The browser's safetensors reader on the layer (Python 3.12, numpy 2.0.2): prints describe() of each file as JSON."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
LAYER = os.path.join(ROOT, "browser", "compat")
sys.path[:0] = [LAYER, ROOT]  # `torch` is the layer; the helpers are tests.browser.*

import safetensors  # noqa: E402 - the reader
import torch  # noqa: E402 - the layer

from tests.browser.browser_reader import describe  # noqa: E402

assert os.path.realpath(safetensors.__file__).startswith(LAYER) and os.path.realpath(torch.__file__).startswith(LAYER)
json.dump({p: describe(safetensors.safe_open, p) for p in sys.argv[1:]}, sys.stdout)

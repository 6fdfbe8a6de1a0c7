"""Chapter 0's engine in one file (minisgl/tiny_engine.py): greedy tokens equal transformers' on tiny Llama and Qwen3
checkpoints (GQA and not, tied and not) and on SmolLM2-135M; bad input is refused."""

from __future__ import annotations

import pytest

from minisgl.testing import hf_greedy_with_margins, smollm2_path, tiny_model
from minisgl.tiny_engine import TinyEngine
from tests.support import assert_greedy_equal

PROMPTS = [[1, 2, 3, 4, 5], [7], [9] * 12, [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]]


@pytest.mark.parametrize("arch, gqa, tied", [("llama", True, False), ("qwen3", True, False), ("qwen3", False, True)])
def test_tiny_models_equal_transformers(arch, gqa, tied):
    path = tiny_model(arch, gqa=gqa, tied=tied)
    want, margins = hf_greedy_with_margins(path, PROMPTS, 12)
    engine = TinyEngine(path)
    assert_greedy_equal([engine.generate(p, 12, stop_at_eos=False) for p in PROMPTS], want, margins, path.name)


def test_smollm2_equals_transformers():
    path = smollm2_path()
    prompts = [[1, 504, 3458, 282, 4649, 314], [28, 2682, 28, 260, 9371, 30]]
    want, margins = hf_greedy_with_margins(path, prompts, 10)
    engine = TinyEngine(path)
    assert_greedy_equal([engine.generate(p, 10, stop_at_eos=False) for p in prompts], want, margins, "SmolLM2")


def test_eos_stops_and_bad_input_is_refused(tmp_path):
    engine = TinyEngine(tiny_model("llama"), max_len=64)
    out = engine.generate([1, 2, 3], 40, stop_at_eos=False)
    eos = next(iter(engine.eos))
    first = out.index(eos) if eos in out else None
    stopped = engine.generate([1, 2, 3], 40)
    assert stopped == (out if first is None else out[: first + 1])
    with pytest.raises(ValueError, match="a prompt of 1 to"):
        engine.generate([], 4)
    with pytest.raises(ValueError, match="a prompt of 1 to 24"):
        engine.generate([1] * 30, 40)
    (tmp_path / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}')
    with pytest.raises(ValueError, match="not a Llama or Qwen3"):
        TinyEngine(tmp_path)

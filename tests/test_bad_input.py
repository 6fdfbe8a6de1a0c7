"""Bad input is refused with a clear error and leaves the engine usable."""

from __future__ import annotations

import json
import shutil

import pytest

from minisgl.core import SamplingParams
from minisgl.models import ModelLoadError
from minisgl.testing import PROMPTS
from tests.support import build_llm, greedy, hf_tokens


@pytest.fixture(scope="module")
def llm(qwen3):
    llm = build_llm(qwen3)
    yield llm
    llm.shutdown()


@pytest.mark.parametrize("prompts, params, message", [
    ([""], greedy(4), "prompt 0 is empty"),
    ([[]], greedy(4), "prompt 0 is empty"),
    (["ok", ""], greedy(4), "prompt 1 is empty"),
    ([], greedy(4), "prompts is empty"),
    (["x" * 400], greedy(4), "leave no room for a new token in the context of 160 (max_seq_len)"),
    (["Hello"], greedy(200), "exceeds the context of 160 tokens (max_seq_len)"),
    (["Hello"], SamplingParams(max_tokens=0), "max_tokens must be a positive integer, got 0"),
    (["Hello"], SamplingParams(max_tokens=-3), "max_tokens must be a positive integer, got -3"),
    (["Hello"], SamplingParams(top_p=0.0), "top_p must be in (0, 1]"),
    (["Hello"], SamplingParams(temperature=-1.0), "temperature must be >= 0"),
    (["Hello"], SamplingParams(top_k=0), "top_k must be -1"),
    ([[1, 99999]], greedy(4), "token id 99999 is outside the vocabulary"),
    (["Hello", "World"], [greedy(4)], "1 sampling params for 2 prompts"),
])
def test_bad_requests_are_refused_and_the_engine_goes_on(llm, qwen3, prompts, params, message):
    with pytest.raises(ValueError) as e:
        llm.generate(prompts, params)
    assert message in str(e.value)
    assert llm.scheduler.check_integrity() == []
    assert not llm.scheduler.has_work  # nothing of the bad call was queued
    out = llm.generate(PROMPTS[:2], greedy(8))
    assert [o["token_ids"] for o in out] == [t[:8] for t in hf_tokens(qwen3, PROMPTS[:2], 32)]


def test_a_bad_prompt_in_a_batch_queues_none_of_it(llm):
    with pytest.raises(ValueError, match="prompt 2 is empty"):
        llm.generate(["a", "b", "", "c"], greedy(4))
    assert not llm.scheduler.has_work


def test_wrong_types_are_refused(llm):
    with pytest.raises(TypeError, match="list of strings"):
        llm.generate("just a string", greedy(4))
    with pytest.raises(TypeError, match="prompt 0"):
        llm.generate([3.5], greedy(4))


@pytest.mark.parametrize("kw, message", [
    (dict(attention_backend="flashattention9"), "unknown attention backend 'flashattention9'; choose one of"),
    (dict(cache_type="lru"), "unknown cache type 'lru'; choose one of: naive, radix"),
    (dict(page_size=0), "page_size must be >= 1"),
])
def test_bad_engine_options_are_refused(qwen3, kw, message):
    with pytest.raises(ValueError) as e:
        build_llm(qwen3, **kw)
    assert message in str(e.value)


def test_model_folder_without_config(tmp_path):
    with pytest.raises(ModelLoadError, match="no config.json"):
        build_llm(tmp_path)
    with pytest.raises(ModelLoadError, match="does not exist"):
        build_llm(tmp_path / "nope")


def test_model_folder_with_a_missing_weight(qwen3, tmp_path):
    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(qwen3, broken)
    weights = load_file(broken / "model.safetensors")
    del weights["model.layers.1.self_attn.k_proj.weight"]
    save_file(weights, broken / "model.safetensors")
    with pytest.raises(ModelLoadError, match=r"missing weights in the checkpoint: model\.layers\.1\.self_attn\.k_proj"):
        build_llm(broken)


def test_model_with_an_unknown_architecture(qwen3, tmp_path):
    odd = tmp_path / "odd"
    shutil.copytree(qwen3, odd)
    cfg = json.loads((odd / "config.json").read_text())
    cfg["architectures"] = ["MambaForCausalLM"]
    (odd / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="unknown model architecture 'MambaForCausalLM'"):
        build_llm(odd)


def test_model_with_a_wrongly_shaped_weight(qwen3, tmp_path):
    from safetensors.torch import load_file, save_file

    bad = tmp_path / "bad"
    shutil.copytree(qwen3, bad)
    weights = load_file(bad / "model.safetensors")
    weights["model.norm.weight"] = weights["model.norm.weight"][:10].clone()
    save_file(weights, bad / "model.safetensors")
    with pytest.raises(ModelLoadError, match=r"model\.norm\.weight has shape \(10,\)"):
        build_llm(bad)


def test_generate_after_shutdown_is_refused(qwen3):
    llm = build_llm(qwen3)
    llm.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        llm.generate(["Hello"], greedy(2))

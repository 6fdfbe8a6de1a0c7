"""The CPU's linear path (minisgl.engine.linear_path): every kernel equals F.linear, the engine's tokens with each one
equal transformers', the self-check rejects a wrong kernel, and a weight changed after start-up is never served
stale."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from minisgl.engine import EngineConfig
from minisgl.engine import linear_path as lp
from minisgl.layers import Linear, LMHead, OPList, VocabEmbedding
from minisgl.testing import PROMPTS, tiny_model
from tests.support import build_llm, greedy, hf_tokens

CPU = torch.device("cpu")
N = 24


def kinds() -> list[str]:
    return [k for k in lp.MAKERS if lp._available(k)]


def linear(rows: int, cols: int, bias: bool, seed: int) -> Linear:
    g = torch.Generator().manual_seed(seed)
    lin = Linear(cols, rows, bias, torch.float32, CPU)
    lin.weight.copy_(torch.randn(rows, cols, generator=g))
    if bias:
        lin.bias.copy_(torch.randn(rows, generator=g))
    return lin


@pytest.mark.parametrize("kind", list(lp.MAKERS))
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
def test_each_kernel_equals_f_linear(kind, bias):
    if not lp._available(kind):
        pytest.skip(f"{kind} is not in this PyTorch build")
    lin = linear(37, 19, bias, 0)
    kernel = lp.MAKERS[kind](lin.weight, lin.bias)
    for rows in (1, 3, 4, 16, 17, 70):
        x = torch.randn(rows, 19)
        assert torch.allclose(kernel(x), F.linear(x, lin.weight, lin.bias), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", [k for k in lp.MAKERS if k != "default"])
@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_forced_backend_matches_hf(backend, arch):
    if not lp._available(backend):
        pytest.skip(f"{backend} is not in this PyTorch build")
    path = tiny_model(arch, tied=arch == "llama")
    llm = build_llm(path, linear_backend=backend)
    try:
        assert llm.engine.linear_path == backend
        layers = list(lp.model_linears(llm.engine.model))
        assert layers and all(layer._fast is not None for layer in layers)  # the LM head too
        got = [o["token_ids"] for o in llm.generate(PROMPTS, greedy(N))]
    finally:
        llm.shutdown()
    assert got == hf_tokens(path, PROMPTS, N)


def test_auto_keeps_the_default_for_a_tiny_model(qwen3):
    llm = build_llm(qwen3)
    try:
        assert llm.engine.linear_path == "default"
        assert all(layer._fast is None for layer in lp.model_linears(llm.engine.model))
    finally:
        llm.shutdown()


def test_choose_times_every_kind_and_picks_per_shape():
    layers = [linear(64, 48, False, i) for i in range(3)] + [linear(48, 64, True, 9)]
    choice = lp.choose(layers, kinds())
    assert set(choice.seconds) == set(kinds()) == set(choice.built)
    assert set(choice.picks) == {(64, 48, False), (48, 64, True)}
    assert all(k in choice.seconds for pair in choice.picks.values() for k in pair)
    assert all(len(v) == 3 and all(t > 0 for t in v) for v in choice.seconds.values())


def test_choose_rejects_a_kernel_that_differs(monkeypatch):
    def wrong(w, b):
        return lambda x: F.linear(x, w, b) * 1.001

    monkeypatch.setitem(lp.MAKERS, "transposed", wrong)
    choice = lp.choose([linear(64, 48, False, 0)], ["default", "transposed"])
    assert "transposed" not in choice.seconds and "transposed" not in choice.built
    assert choice.picks == {(64, 48, False): ("default",) * 3}


def test_the_installed_path_dispatches_by_rows_and_never_serves_a_stale_weight(monkeypatch):
    model = OPList([linear(40, 24, True, 1), linear(24, 40, False, 2)])
    monkeypatch.setattr(lp, "_MIN_AUTO_BYTES", 0)
    picks = {(40, 24, True): ("transposed", "default", "default"), (24, 40, False): ("default",) * 3}
    monkeypatch.setattr(lp, "choose", lambda layers, kinds: lp.Choice(picks, {}, {}, lp.group_layers(
        [lp.weights_of(layer) for layer in layers])))
    got = lp.install_linear_path(model, "auto", CPU, torch.float32)
    assert got == "40x24+b transposed/default/default, 24x40 default"
    first = model[0]
    assert isinstance(first._fast.kernel, lp.Dispatch) and model[1]._fast is None
    x = torch.randn(1, 24)
    assert torch.allclose(first.forward(x), F.linear(x, first.weight, first.bias), atol=1e-5)
    new = {"0.weight": torch.randn(40, 24), "0.bias": torch.randn(40), "1.weight": torch.randn(24, 40)}
    model.load_state_dict(new)  # in place: the prepared copies are now stale
    assert not first._fast.fresh(first.weight, first.bias)
    for rows in (1, 6, 40):
        x = torch.randn(rows, 24)
        assert torch.allclose(first.forward(x), F.linear(x, new["0.weight"], new["0.bias"]), atol=1e-5)
    first.weight = torch.randn(40, 24)  # replaced: stale as well
    assert torch.allclose(first.forward(x), F.linear(x, first.weight, first.bias), atol=1e-5)


def test_a_tied_lm_head_is_prepared_from_the_embedding(monkeypatch):
    emb = VocabEmbedding(50, 16, torch.float32, CPU)
    emb.weight.copy_(torch.randn(50, 16))
    model = OPList([emb, LMHead(50, 16, torch.float32, CPU, tied=emb)])
    monkeypatch.setattr(lp, "_MIN_AUTO_BYTES", 0)
    assert lp.install_linear_path(model, "transposed", CPU, torch.float32) == "transposed"
    head = model[1]
    assert head._fast is not None and head._fast.fresh(emb.weight, None)
    emb.weight.mul_(2)  # changed in place: the head falls back to F.linear on the new weight
    assert not head._fast.fresh(emb.weight, None)


def test_non_cpu_or_non_float32_keeps_the_default():
    model = OPList([linear(8, 8, False, 0)])
    assert lp.install_linear_path(model, "transposed", CPU, torch.bfloat16) == "default"
    assert lp.install_linear_path(model, "auto", torch.device("meta"), torch.float32) == "default"
    assert model[0]._fast is None


def test_config_rejects_an_unknown_backend(qwen3):
    with pytest.raises(ValueError, match="linear_backend"):
        EngineConfig(model_path=qwen3, linear_backend="fast").validate()


def test_weights_made_under_inference_mode_are_prepared_by_identity():
    from minisgl.layers.linear import PreparedLinear

    with torch.inference_mode():  # inference tensors keep no version counter
        lin = linear(8, 6, True, 0)
        prepared = PreparedLinear(lin.weight, lin.bias, lp.MAKERS["transposed"](lin.weight, lin.bias))
        assert prepared.fresh(lin.weight, lin.bias) and not prepared.fresh(torch.randn(8, 6), lin.bias)

"""Outside its subset the browser's torch raises NotImplementedError naming what is missing: never a silently
wrong answer. Each name below is real PyTorch API (checked against torch), so the refusal is about a real function."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.browser.browser_env import load_layer

T = load_layer()
UNSUPPORTED = "is not implemented in the browser's torch"


@pytest.mark.parametrize("name", ["einsum", "randn", "bmm", "nn.Module", "cuda.synchronize", "cuda.CUDAGraph",
                                  "cuda.graph", "cuda.mem_get_info", "nn.functional.gelu", "from_numpy"])
def test_module_names_outside_the_subset(name):
    real, layer = torch, T
    *path, last = name.split(".")
    for part in path:
        real, layer = getattr(real, part), getattr(layer, part)
    assert hasattr(real, last), f"torch.{name} is not real torch API"
    assert not hasattr(layer, last)  # hasattr() is False (the error is also an AttributeError) ...
    with pytest.raises(NotImplementedError, match=rf"torch\.{name} {UNSUPPORTED}"):  # ... and names the function
        getattr(layer, last)


@pytest.mark.parametrize("name", ["expand", "split", "index_add_", "masked_select", "numpy", "cuda", "backward"])
def test_tensor_methods_outside_the_subset(name):
    assert hasattr(torch.zeros(1), name)
    with pytest.raises(NotImplementedError, match=rf"Tensor\.{name} {UNSUPPORTED}"):
        getattr(T.zeros(2), name)


def test_private_names_are_plain_attribute_errors():
    with pytest.raises(AttributeError) as e:
        T.zeros(1).__array_interface__  # noqa: B018 - what numpy and copy probe for
    assert not isinstance(e.value, NotImplementedError)
    with pytest.raises(AttributeError):
        T._C  # noqa: B018
    assert copy.deepcopy(T.zeros(2)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("call", [
    lambda: T.Tensor([1.0]),
    lambda: T.zeros(2, dtype=T.bfloat16),
    lambda: T.zeros(2).to(T.bfloat16),
    lambda: T.zeros(4).view(T.int32),
    lambda: T.zeros(3).scatter_(0, T.tensor([0]), 1.0, reduce="add"),
    lambda: T.nn.functional.embedding(T.tensor([0]), T.zeros(2, 2), max_norm=1.0),
    lambda: T.nn.functional.scaled_dot_product_attention(T.zeros(1, 2, 2), T.zeros(1, 2, 2), T.zeros(1, 2, 2),
                                                         dropout_p=0.1),
    lambda: T.arange(0, 5, 2.0, dtype=T.int64),
    lambda: T.zeros(2, 3)[..., 0, ...],
    lambda: T.zeros(3)[[1.5]],
    lambda: T.zeros(2).add(T.ones(2), alpha=2),
    lambda: T.zeros(2).sub(1, alpha=2),
    lambda: T.multinomial(T.ones(2), 1, out=T.zeros(1)),
    lambda: T.multinomial(T.ones(2), 3, replacement=True),
    lambda: T.zeros(2, requires_grad=True),
    lambda: T.tensor([1.0], pin_memory=True),
    lambda: T.tensor([T.tensor(1.0)]),
    lambda: T.nn.functional.softmax(T.zeros(2)),
], ids=["legacy-constructor", "bfloat16-zeros", "bfloat16-to", "view-dtype", "scatter-reduce", "embedding-max_norm",
        "sdpa-dropout", "arange-float-int", "two-ellipses", "float-list-index", "add-alpha", "sub-alpha",
        "multinomial-out", "multinomial-replacement", "requires_grad", "pin_memory", "tensor-of-tensors",
        "softmax-no-dim"])
def test_arguments_outside_the_subset(call):
    with pytest.raises(NotImplementedError, match=UNSUPPORTED):
        call()


def test_cuda_is_absent_as_in_a_torch_without_cuda():
    assert T.cuda.is_available() is False
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        T.zeros(2, device="cuda")
    assert T.device("cuda").type == "cuda"  # a name minisgl asks about (is_cuda), never a place for tensors

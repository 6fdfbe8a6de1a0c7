"""The browser's safetensors reader gives the tensors real safetensors gives, byte for byte (the tiny models'
weights, and a file of every dtype), on numpy 2.4 and 2.0.2; bad files get a clear error."""

from __future__ import annotations

import json
import struct

import pytest
import safetensors
import torch
from safetensors.torch import save_file

from tests.browser.browser_env import MISSING_PYTHON, browser_python, load_reader, run_browser_python
from tests.browser.browser_reader import describe
from tests.support import need

READER = load_reader()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from minisgl.testing import tiny_model

    d = tmp_path_factory.mktemp("st")
    g = torch.Generator().manual_seed(0)
    mixed = {
        "z.f64": torch.randn(3, 2, generator=g, dtype=torch.float64), "a.f32": torch.randn(4, 5, generator=g),
        "m.f16": torch.randn(7, generator=g).half(), "i64": torch.randint(-2**40, 2**40, (3,), generator=g),
        "i32": torch.randint(-9, 9, (2, 2), dtype=torch.int32, generator=g),
        "i16": torch.tensor([-3, 4], dtype=torch.int16),
        "i8": torch.tensor([[-128, 127]], dtype=torch.int8), "u8": torch.tensor([0, 255, 7], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]), "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4),
        "cube": torch.arange(24.0).reshape(2, 3, 4),
    }
    save_file(mixed, str(d / "mixed.safetensors"), metadata={"format": "pt", "note": "every dtype"})
    save_file({"w": torch.randn(3, generator=g).bfloat16(), "ok": torch.ones(2)}, str(d / "bf16.safetensors"))
    return [str(tiny_model("qwen3") / "model.safetensors"), str(tiny_model("llama") / "model.safetensors"),
            str(d / "mixed.safetensors"), str(d / "bf16.safetensors")]


def _want(path: str) -> dict:
    got = json.loads(json.dumps(describe(safetensors.safe_open, path)))
    for name, t in got["tensors"].items():
        if t.get("dtype") == "torch.bfloat16":  # numpy has no bfloat16: the reader refuses it (documented)
            got["tensors"][name] = {"raised": "NotImplementedError"}
    return got


def test_same_tensors_as_real_safetensors(files):
    for path in files:
        got = json.loads(json.dumps(describe(READER.safe_open, path)))
        assert got == _want(path), path
    assert len(_want(files[0])["tensors"]) >= 20


def test_same_tensors_on_the_browser_numpy(files):
    need(browser_python() is not None, MISSING_PYTHON)
    got = run_browser_python("run_reader.py", *files)
    for path in files:
        assert got[path] == _want(path), path


def test_the_model_loads_through_it(files):
    with READER.safe_open(files[0], framework="pt") as f:
        t = f.get_tensor("model.embed_tokens.weight")
        before = t.sum().item()
        t[0] = 7.0  # writable, and the reader's own copy (real safetensors maps the file instead)
        assert f.get_tensor("model.embed_tokens.weight").sum().item() == before
    assert type(t).__module__ == "torch" and type(t).__name__ == "Tensor" and str(t.dtype) == "torch.float32"
    for device in (None, "cpu"):  # as in safetensors, None is the CPU; another device is refused
        with READER.safe_open(files[0], framework="pt", device=device) as f:
            assert f.get_tensor("model.embed_tokens.weight").sum().item() == before
    with pytest.raises(NotImplementedError, match="only the CPU"):
        READER.safe_open(files[0], framework="pt", device="cuda")
    with READER.safe_open(files[2], framework="pt") as f:
        assert f.metadata() == {"format": "pt", "note": "every dtype"}
        assert f.keys() == sorted(f.keys())
        with pytest.raises(READER.SafetensorError, match="does not contain tensor nope"):
            f.get_tensor("nope")


def _write(path, header: bytes, data: bytes = b"") -> str:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return str(path)


def test_bad_files_get_a_clear_error(tmp_path):
    ok = json.dumps({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    three = json.dumps({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}).encode()
    cases = {
        "short": (tmp_path / "short", b"\x01\x02"),
        "huge header": (tmp_path / "huge", struct.pack("<Q", 1 << 40)),
        "not json": (tmp_path / "nj", None, b"{nope"),
        "not an object": (tmp_path / "na", None, b"[1, 2]"),
        "offsets past the end": (tmp_path / "past", None, ok, b"\x00" * 4),
        "size mismatch": (tmp_path / "size", None, three, b"\x00" * 8),
        "malformed entry": (tmp_path / "entry", None, json.dumps({"t": {"dtype": "F32"}}).encode()),
    }
    for label, spec in cases.items():
        path = spec[0]
        if spec[1] is not None:
            path.write_bytes(spec[1])
            p = str(path)
        else:
            p = _write(path, spec[2], spec[3] if len(spec) > 3 else b"")
        with pytest.raises(READER.SafetensorError) as e:
            READER.safe_open(p, framework="pt")
        assert p in str(e.value), label
    good = _write(tmp_path / "good", ok, struct.pack("<2f", 1.5, -2.0))
    with READER.safe_open(good, framework="pt") as f:
        assert f.get_tensor("t").tolist() == [1.5, -2.0]
    with pytest.raises(NotImplementedError, match="framework 'tf'"):
        READER.safe_open(good, framework="tf")
    with pytest.raises(NotImplementedError, match="device 'cuda'"):
        READER.safe_open(good, framework="pt", device="cuda")

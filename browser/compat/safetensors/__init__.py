"""A `safetensors` reader on numpy for the browser (the real package is Rust): ``safe_open(path, framework="pt")``
with ``keys()``, ``get_tensor(name)`` and ``metadata()``, as minisgl/models/weight.py uses it. The tensors are
the browser torch's, byte-identical to the file. Only reading; BF16 and 8-bit floats are refused (numpy has
no such dtypes: widening them would change the bytes)."""

from __future__ import annotations

import importlib
import json
import os
import struct
from typing import Any

import numpy as np

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
           "U8": "u1", "BOOL": "?"}
_MAX_HEADER = 100 << 20  # the real reader's limit


class SafetensorError(Exception):
    """A file that is not a valid safetensors file, or a tensor that is not in it."""


TORCH = "torch"  # the module holding the browser's torch (tests load it under another name beside real torch)


class safe_open:
    def __init__(self, filename: str | os.PathLike, framework: str, device: str | None = "cpu") -> None:
        if framework not in ("pt", "np", "numpy"):
            raise NotImplementedError(f"safetensors framework {framework!r} is not implemented in the browser "
                                      "(only 'pt' and 'numpy')")
        if device is not None and str(device) != "cpu":  # None is the CPU, as in safetensors
            raise NotImplementedError(f"safetensors device {device!r}: the browser has only the CPU")
        self._path, self._framework = os.fspath(filename), framework
        with open(self._path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise SafetensorError(f"{self._path}: file too small to be a safetensors file")
            (n,) = struct.unpack("<Q", head)
            if n > _MAX_HEADER:
                raise SafetensorError(f"{self._path}: header of {n} bytes is too large")
            raw = f.read(n)
            size = os.fstat(f.fileno()).st_size
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise SafetensorError(f"{self._path}: invalid header ({e})") from None
        if not isinstance(header, dict):
            raise SafetensorError(f"{self._path}: the header is not a JSON object")
        self._metadata = header.pop("__metadata__", None)
        self._start = 8 + n
        self._entries: dict[str, tuple[str, tuple[int, ...], int, int]] = {}
        for name, e in header.items():
            try:
                dtype, shape, (begin, end) = e["dtype"], tuple(int(s) for s in e["shape"]), e["data_offsets"]
            except (KeyError, TypeError, ValueError):
                raise SafetensorError(f"{self._path}: tensor {name!r} has a malformed header entry") from None
            count = 1
            for s in shape:
                count *= s
            itemsize = np.dtype(_DTYPES[dtype]).itemsize if dtype in _DTYPES else None
            if not 0 <= begin <= end <= size - self._start or (itemsize and end - begin != count * itemsize):
                raise SafetensorError(f"{self._path}: tensor {name!r} has invalid data offsets {[begin, end]}")
            self._entries[name] = (dtype, shape, begin, end)

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def keys(self) -> list[str]:
        return sorted(self._entries)

    def metadata(self) -> dict[str, str] | None:
        return self._metadata

    def get_tensor(self, name: str) -> Any:
        if name not in self._entries:
            raise SafetensorError(f"File does not contain tensor {name}")
        dtype, shape, begin, end = self._entries[name]
        if dtype not in _DTYPES:
            raise NotImplementedError(f"safetensors dtype {dtype} (tensor {name!r}) is not implemented in the "
                                      "browser: numpy has no such dtype")
        buf = bytearray(end - begin)
        with open(self._path, "rb") as f:
            f.seek(self._start + begin)
            if f.readinto(buf) != len(buf):
                raise SafetensorError(f"{self._path}: tensor {name!r} is cut short")
        a = np.frombuffer(buf, dtype=_DTYPES[dtype]).reshape(shape)  # writable: it owns the bytearray
        a = a.astype(a.dtype.newbyteorder("="), copy=False)  # native order (a no-op on little-endian machines)
        if self._framework != "pt":
            return a
        return importlib.import_module(TORCH)._tensor.wrap(a)  # the layer's own constructor: no copy

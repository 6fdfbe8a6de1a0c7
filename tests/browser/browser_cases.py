"""The conformance cases of the browser's torch layer.

Each case is a function ``case(T, g)`` written against a torch module ``T``: real PyTorch or the layer. It draws
its inputs from ``g`` (Python's ``random``, seeded by the case's name, so both sides get the same inputs in any
process and on any numpy) and returns plain values, tensors, or ``g.run(...)`` results (a value, or the name of
the exception raised). The suite runs every case on both sides and compares: dtype, shape and values of every
tensor, Python types of scalars, and which exception was raised. Views are checked by what they do: a write
through a view must show in its base (and a copy must not), and ``data_ptr`` offsets must be torch's.

This file imports neither torch nor pytest: the numpy 2.0.2 run executes it in a Python 3.12 process where
``import torch`` is the layer.
"""

from __future__ import annotations

import copy
import operator
import random
import zlib
from collections.abc import Callable
from typing import Any

CASES: dict[str, Callable[[Any, Gen], Any]] = {}
TOLERANCE: dict[str, float] = {}  # relative tolerance for float32 results, per case (default 1e-5)

FLOATS = ("float32", "float64")
INTS = ("int64", "int32", "uint8")
DTYPES = FLOATS + INTS + ("bool",)
ALL_DTYPES = DTYPES + ("float16", "int16", "int8")


def case(fn: Callable | None = None, *, tol: float | None = None) -> Any:
    def register(f: Callable) -> Callable:
        CASES[f.__name__] = f
        if tol is not None:
            TOLERANCE[f.__name__] = tol
        return f

    return register(fn) if fn is not None else register


class Raised(str):
    """A case step that raised: the exception's class name."""


class Gen:
    """Inputs for one case, the same on both sides: Python's random, seeded by the case's name."""

    def __init__(self, T: Any, name: str) -> None:
        self.T = T
        self.r = random.Random(zlib.crc32(name.encode()))

    def run(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            return Raised(type(e).__name__)

    def values(self, n: int, dtype: str, lo: int = -4, hi: int = 4) -> list:
        r = self.r
        if dtype == "bool":
            return [r.random() < 0.5 for _ in range(n)]
        if dtype.startswith("float"):
            return [round(r.uniform(lo, hi), 3) for _ in range(n)]
        if dtype == "uint8":
            lo, hi = max(lo, 0), max(hi, 1)
        return [r.randint(lo, hi) for _ in range(n)]

    def tensor(self, shape: tuple, dtype: str = "float32", lo: int = -4, hi: int = 4) -> Any:
        n = 1
        for s in shape:
            n *= s
        flat = self.values(n, dtype, lo, hi)
        T = self.T
        if shape == ():
            return T.tensor(flat[0], dtype=getattr(T, dtype))
        return T.tensor(flat, dtype=getattr(T, dtype)).reshape(shape)

    def distinct(self, shape: tuple, dtype: str = "float32") -> Any:
        """No two values equal (for sort, topk, argmax: ties may be broken differently)."""
        n = 1
        for s in shape:
            n *= s
        vals = self.r.sample(range(-500, 500), n)
        vals = [v / 8 for v in vals] if dtype.startswith("float") else vals
        return self.T.tensor(vals, dtype=getattr(self.T, dtype)).reshape(shape)

    def layouts(self, shape: tuple, dtype: str = "float32") -> list:
        """The same logical shape in different memory: contiguous, transposed, strided, at an offset."""
        out = [self.tensor(shape, dtype)]
        if len(shape) >= 2:
            out.append(self.tensor(shape[::-1], dtype).permute(*reversed(range(len(shape)))))
        if shape:
            out.append(self.tensor(shape[:-1] + (shape[-1] * 2,), dtype)[..., ::2])
            out.append(self.tensor((shape[0] + 1,) + shape[1:], dtype)[1:])
        return out


def ptr_offset(view: Any, base: Any) -> int:
    return (view.data_ptr() - base.data_ptr()) // base.element_size()


def view_of(T: Any, r: Any, base: Any) -> list:
    """[whether a write into r shows in base, r's data_ptr offset in base if it does]; base is left as it was."""
    before = base.clone()
    r.fill_(111)
    shared = not T.equal(before, base)
    base.copy_(before)
    return [shared, ptr_offset(r, base) if shared else None]


# ----------------------------------------------------------------------------------------------
# creation


@case
def creation_tensor(T, g):
    out = []
    for data in (
        [],
        [[]],
        3,
        2.5,
        True,
        [1, 2, 3],
        [1.5, 2],
        [True, False],
        [[1, 2], [3, 4]],
        [True, 2],
        [1, 2.5],
        [[[1], [2]], [[3], [4]]],
        (1, 2),
        [-1, 300],
    ):
        out.append(g.run(T.tensor, data))
        for dt in ALL_DTYPES:
            out.append(g.run(T.tensor, data, dtype=getattr(T, dt)))
    src = T.tensor([1, 2, 3], dtype=T.int32)
    cp = T.tensor(src)
    src[0] = 9
    out += [cp, T.tensor(src, dtype=T.float32), T.tensor([1, 2], device="cpu"), T.tensor([1], device=T.device("cpu"))]
    out.append(g.run(T.tensor, [[1, 2], [3]]))
    out.append(g.run(T.tensor, [1], device="cuda"))
    out.append(T.tensor([0.1, 1e-8, 3.4e38]))
    return out


@case
def creation_factories(T, g):
    out = []
    for size in ((2, 3), (0,), (), (2, 0), [3], T.Size([2, 2])):
        for fn in (T.zeros, T.ones):
            out.append(fn(size))
            out.append(g.run(fn, *size) if isinstance(size, tuple) else fn(size))
        e = T.empty(size)
        out.append((e.shape, e.dtype))
        for dt in DTYPES:
            out.append(T.zeros(size, dtype=getattr(T, dt)))
            out.append(T.ones(size, dtype=getattr(T, dt)))
            out.append(T.empty(size, dtype=getattr(T, dt)).dtype)
            out.append(T.full(size, 3, dtype=getattr(T, dt)))
        for fill in (True, 3, 0.5, -2):
            out.append(T.full(size, fill))
    out.append(T.zeros(2, 3, dtype=T.int32, device="cpu"))
    out.append(T.empty(3, device=T.device("cpu")).shape)
    for fn in (T.zeros, T.ones, T.empty):
        out.append(g.run(fn, -1))
        out.append(g.run(fn, 2, device="cuda"))
        out.append(g.run(fn, 2.5))
    out.append(g.run(T.full, (-1,), 1))
    out.append(T.full((2,), 2.5, dtype=T.int32))
    return out


@case
def creation_like(T, g):
    out = []
    for t in g.layouts((3, 4), "int32") + [g.tensor((), "float32"), g.tensor((0, 2), "bool")]:
        for fn in (T.zeros_like, T.ones_like, T.empty_like):
            r = fn(t)
            out += [r.shape, r.dtype, r.is_contiguous()]
            if fn is not T.empty_like:
                out.append(r)
            r = fn(t, dtype=T.float64)
            out += [r.dtype, r.is_contiguous()]
    out.append(g.run(T.zeros_like, [1, 2]))
    out.append(g.run(T.zeros_like, T.zeros(2), device="cuda"))
    return out


@case
def creation_arange(T, g):
    out = []
    for args in (
        (5,),
        (2, 9),
        (0, 10, 3),
        (10, 0, -3),
        (0, 1, 0.1),
        (0.5, 3),
        (-3, 4, 2),
        (0,),
        (5, 5),
        (1, 2.5, 0.25),
        (0, -1, -0.3),
        (0, 5, 2.0),
    ):
        out.append(g.run(T.arange, *args))
        floats = any(isinstance(a, float) for a in args)  # float arguments with an integer dtype: not in the layer
        for dt in ("float32", "float64") if floats else ("int32", "int64", "float32", "float64"):
            out.append(g.run(T.arange, *args, dtype=getattr(T, dt)))
    out += [T.arange(0, 6, 2, dtype=T.int64, device="cpu"), T.arange(T.tensor(4)), T.arange(4, device=T.device("cpu"))]
    out += [
        g.run(T.arange, 5, 0),
        g.run(T.arange, 0, 5, 0),
        g.run(T.arange, 0, 5, -1),
        g.run(T.arange, 3, device="cuda"),
    ]
    out.append(g.run(T.arange, "3"))
    return out


# ----------------------------------------------------------------------------------------------
# dtype, device, Size, metadata


@case
def dtype_objects(T, g):
    out = []
    for name in ALL_DTYPES + ("bfloat16",):
        d = getattr(T, name)
        out += [
            str(d),
            repr(d),
            d.is_floating_point,
            d.itemsize,
            d.is_signed,
            copy.deepcopy(d) is d,
            d == getattr(T, name),
            d != T.int32,
        ]
    out += [
        T.float is T.float32,
        T.double is T.float64,
        T.half is T.float16,
        T.long is T.int64,
        T.int is T.int32,
        T.short is T.int16,
        T.bool is not bool,
        isinstance(T.float32, T.dtype),
    ]
    out.append(g.run(T.dtype))
    return out


@case
def device_objects(T, g):
    out = []
    for args in (("cpu",), ("cuda",), ("cuda:1",), ("cuda", 0), ("cpu", 0), ("cpu:0",)):
        d = T.device(*args)
        out += [
            str(d),
            repr(d),
            d.type,
            d.index,
            d == T.device(*args),
            hash(d) == hash(T.device(*args)),
            T.device(d) == d,
            copy.deepcopy(d) == d,
        ]
    out += [T.device("cpu") == T.device("cuda"), T.device("cpu") == "cpu", T.device("cpu") != T.device("cpu:0")]
    for bad in ("foo", "cuda:x", "cuda:0:1", 3.5):
        out.append(g.run(T.device, bad))
    out.append(g.run(T.device, "cuda:1", 2))
    t = T.zeros(2)
    out += [str(t.device), t.device == T.device("cpu"), t.device.type]
    with T.device("cpu") as d:
        out += [str(d), str(T.zeros(2).device), str(T.arange(3).device)]
    with T.device("cuda"):
        out.append(g.run(T.zeros, 2))
    out.append(str(T.zeros(1).device))
    return out


@case
def size_and_metadata(T, g):
    out = []
    for shape in ((), (0,), (3,), (2, 3), (2, 0, 4), (1, 2, 3, 4)):
        for dt in ALL_DTYPES:
            t = g.tensor(shape, dt)
            s = t.shape
            out += [
                s,
                repr(s),
                s.numel(),
                t.size(),
                t.dim(),
                t.ndim,
                t.numel(),
                t.element_size(),
                t.is_floating_point(),
                type(s[0:1]).__name__ if shape else "",
                s == tuple(shape),
                list(s),
            ]
            for d in range(-len(shape) - 1, len(shape) + 1):
                out.append(g.run(t.size, d))
            out.append(g.run(len, t))
    s = T.zeros(2, 3).shape
    out += [s + (4,), repr(s + (4,)), type(s + (4,)).__name__, (1,) + s, type((1,) + s).__name__, repr(s[1:])]
    return out


# ----------------------------------------------------------------------------------------------
# views: memory sharing, data_ptr, contiguity


@case
def views_share_memory(T, g):
    out = []
    base = g.tensor((4, 6), "int32")
    views = {
        "row": lambda b: b[1],
        "elem": lambda b: b[2, 3],
        "col": lambda b: b[:, 2],
        "rows": lambda b: b[1:3],
        "block": lambda b: b[2:, 1:],
        "step": lambda b: b[::2, 1::3],
        "ellipsis": lambda b: b[..., 4],
        "none": lambda b: b[None, 1:, None],
        "view": lambda b: b.view(24),
        "view2": lambda b: b.view(3, -1),
        "reshape": lambda b: b.reshape(6, 4),
        "permute": lambda b: b.permute(1, 0),
        "transpose": lambda b: b.transpose(0, 1),
        "unsqueeze": lambda b: b.unsqueeze(1),
        "narrow": lambda b: b.narrow(1, 2, 3),
        "squeeze": lambda b: b[1:2].squeeze(0),
        "flatten": lambda b: b.flatten(),
        "t0": lambda b: b[T.tensor(2)],
        "tail": lambda b: b[3:, 5:],
        "neg": lambda b: b[-1, -2:],
        "empty": lambda b: b[2:2],
        "iter": lambda b: list(b)[2],
        "to": lambda b: b.to(T.int32),
        "contig": lambda b: b.contiguous(),
        "cpu": lambda b: b.cpu(),
    }
    for name, make in views.items():
        b = base.clone()
        v = make(b)
        out += [name, v.shape, v.is_contiguous(), ptr_offset(v, b) if v.numel() else v.data_ptr()]
        v.fill_(-7)  # a write through the view
        out.append(b)
    out.append(T.zeros(0).data_ptr())
    return out


@case
def views_of_views(T, g):
    b = g.tensor((3, 4, 5), "float32")
    v = b.permute(2, 0, 1)[1:, :, ::2].transpose(0, 2)
    out = [v.shape, v.is_contiguous(), ptr_offset(v, b)]
    v[0] = 100.0
    v[1, 1].copy_(T.tensor([5.0, 6.0, 7.0, 8.0]))
    out.append(b)
    w = b[1].view(20)[3:9].view(2, 3)
    w.mul_(0)
    w += 2
    out += [b, ptr_offset(w, b)]
    return out


@case
def view_reshape(T, g):
    out = []
    for t in g.layouts((4, 6), "int64") + [g.tensor((), "int64"), g.tensor((0, 3), "int64")]:
        for shape in ((-1,), (2, -1), ((3, 8),), ([12, 2],), (T.Size([24]),), (1, -1, 2), ((),), (1,), (0, 3), (-1, 0)):
            for fn in ("view", "reshape"):
                r = g.run(getattr(t, fn), *shape)
                out.append(r)
                if not isinstance(r, Raised):
                    c = t.clone()
                    getattr(c, fn)(*shape).fill_(99)
                    out.append(c)  # a view (the write shows) or a copy (it does not)
                else:
                    out.append(None)
        out += [g.run(t.view, 5, -1), g.run(t.view, -1, -1), g.run(t.reshape, 7)]
    return out


@case
def permute_transpose(T, g):
    out = []
    for shape in ((2, 3), (2, 3, 4), (1, 2, 3, 4)):
        t = g.tensor(shape)
        n = len(shape)
        dims = list(range(n))
        g.r.shuffle(dims)
        for p in (dims, tuple(dims), [d - n for d in dims]):
            r = t.permute(*p) if isinstance(p, list) else t.permute(p)
            out += [r, r.is_contiguous()]
        for a in range(-n, n):
            r = t.transpose(a, (a + 1) % n)
            out += [r, r.is_contiguous()]
        out += [g.run(t.permute, *([0] * n)), g.run(t.permute, 0), g.run(t.transpose, 0, n)]
        c = t.clone()
        c.permute(*dims)[(0,) * n] = 42.0
        c.transpose(0, -1)[-1] = -1.0
        out.append(c)
    z = g.tensor(())
    out += [z.transpose(0, -1), g.run(z.transpose, 0, 1), g.run(z.permute), z.permute(()), g.run(z.permute, 0), z.t()]
    out += [g.tensor((2, 3)).t(), g.tensor((3,)).t(), g.run(g.tensor((1, 2, 3)).t)]
    return out


@case
def unsqueeze_squeeze_flatten(T, g):
    out = []
    for shape in ((), (3,), (2, 1, 3), (1, 4, 1)):
        t = g.tensor(shape)
        n = len(shape)
        for d in range(-n - 2, n + 2):
            out.append(g.run(t.unsqueeze, d))
            out.append(g.run(t.squeeze, d))
        out += [t.squeeze(), g.run(t.squeeze, (0, -1)), g.run(t.squeeze, [0])]
        for s, e in ((0, -1), (1, -1), (0, 0), (-2, -1), (1, 0), (0, 5)):
            out.append(g.run(t.flatten, s, e))
        out.append(t.flatten())
        c = t.clone()
        c.unsqueeze(0).fill_(5.0)
        out.append(c)
        c.squeeze().mul_(2)
        out.append(c)
    e = g.tensor((2, 0, 3))
    out += [e.flatten(), e.flatten(1), e.squeeze(1)]
    return out


@case
def narrow_case(T, g):
    out = []
    for t in g.layouts((5, 6), "int32"):
        for dim, start, length in (
            (0, 1, 2),
            (-1, 0, 1),
            (1, -3, 2),
            (0, 5, 0),
            (1, 4, 3),
            (0, -6, 1),
            (1, 0, 6),
            (2, 0, 1),
            (0, 1, -1),
            (1, T.tensor(2), 2),
        ):
            r = g.run(t.narrow, dim, start, length)
            out.append(r)
            if not isinstance(r, Raised):
                c = t.clone()
                c.narrow(dim, start, length).fill_(77)
                r = c
            out.append(r)
    out.append(g.run(g.tensor(()).narrow, 0, 0, 1))
    return out


@case
def contiguous_clone(T, g):
    out = []
    for t in g.layouts((3, 4), "float32") + [g.tensor(()), g.tensor((0, 4))]:
        c = t.contiguous()
        out += [c, c.is_contiguous(), c is t, t.is_contiguous()]
        k = t.clone()
        out += [k, k.is_contiguous(), k is t, k.dtype]
        k.fill_(3.0)
        out.append(t)  # the clone's memory is its own
    return out


# ----------------------------------------------------------------------------------------------
# conversion


@case
def to_and_casts(T, g):
    out = []
    for src in ALL_DTYPES:
        t = g.tensor((2, 3), src, lo=0 if src == "uint8" else -4, hi=4)
        if src.startswith("float"):
            t = t + T.tensor([0.25, 0.5, 0.75], dtype=t.dtype)  # fractions: truncation toward zero
        for dst in ALL_DTYPES:
            d = getattr(T, dst)
            if src.startswith("float") and dst == "uint8":
                r = t.abs().to(d)  # negative float to uint8 is undefined in C
            else:
                r = t.to(d)
            out += [r, r is t]
        out += [t.float(), t.double(), t.long(), t.int(), t.bool()]
        out += [t.to("cpu") is t, t.to(T.device("cpu"), non_blocking=True) is t, t.to(t.dtype) is t, t.cpu() is t]
        out += [
            t.to(dtype=T.float64, device="cpu"),
            t.to("cpu", T.int64),
            t.to(T.zeros(1, dtype=T.int32)),
            t.to(copy=True) is t,
            t.to(copy=True),
            t.float().float() is t.float(),
        ]
        out += [g.run(t.to, "cuda"), g.run(t.to, device="cuda:0")]
    v = g.tensor((4, 3)).t()
    out += [v.to(T.float64).is_contiguous(), v.int()]
    return out


@case
def tolist_item_scalars(T, g):
    out = []
    for dt in ALL_DTYPES:
        for shape in ((), (1,), (1, 1), (3,), (2, 2), (0,)):
            t = g.tensor(shape, dt)
            out.append(t.tolist())
            out.append(g.run(t.item))
            out.append(g.run(bool, t))
            out.append(g.run(int, t))
            out.append(g.run(float, t))
            out.append(g.run(operator.index, t))
    i = T.tensor(2)
    out += [list(range(T.tensor(3))), [10, 20, 30][i], [10, 20, 30][T.tensor([1], dtype=T.int32)], "%d" % T.tensor(5)]  # noqa: UP031 - %d asks the tensor for an int
    return out


@case
def repr_and_format(T, g):
    out = []
    for dt in ALL_DTYPES:
        for shape in ((), (3,), (2, 2)):
            t = g.tensor(shape, dt)
            text = repr(t)
            out += [text.startswith("tensor("), ("dtype=" + str(t.dtype)) in text, str(t) == text]
    out += [f"{T.tensor(3.14159):.3f}", f"{T.tensor(7):>4}", format(T.tensor(2.5), "")]
    out.append(f"{T.tensor([1, 2])}".startswith("tensor("))
    return out


@case
def iteration(T, g):
    t = g.tensor((3, 2), "int64")
    rows = list(t)
    out = [rows, len(rows)]
    for r in t:
        r.add_(100)  # rows are views
    out.append(t)
    out += [[x.tolist() for x in g.tensor((4,))], g.run(list, g.tensor(())), list(T.zeros(0, 2))]
    return out


@case
def deepcopy_and_hash(T, g):
    out = []
    for t in g.layouts((3, 4), "float32") + [g.tensor((), "int32")]:
        c = copy.deepcopy(t)
        out += [c, c.dtype, c is t]
        c.fill_(0)
        out.append(t)
    t = g.tensor((2,))
    d = {t: "a"}
    out += [d[t], hash(t) == hash(t), t in d, (t == t).tolist(), t is not copy.deepcopy(t)]
    out += [copy.deepcopy([t, {"k": t}])[1]["k"], copy.deepcopy((T.float32, T.device("cpu")))[0] is T.float32]
    return out


# ----------------------------------------------------------------------------------------------
# indexing


@case
def getitem_basic(T, g):
    out = []
    for t in g.layouts((4, 5, 6), "float32"):
        for key in (
            0,
            -1,
            3,
            (1, 2),
            (-1, -2, -3),
            slice(1, 3),
            slice(None, None, 2),
            (slice(None), slice(1, 5, 3)),
            (Ellipsis, 2),
            (None, 1),
            (1, None, Ellipsis, None),
            (Ellipsis,),
            (),
            (slice(-2, None), 0, slice(None, 2)),
            (slice(5, 1),),
            (slice(0, 100),),
            (0, 0, 0),
            (T.tensor(1), T.tensor(-1)),
            (slice(T.tensor(1), T.tensor(3)),),
            (None, None),
            (Ellipsis, None, 0),
            (4,),
            (0, 5),
            (0, 0, 0, 0),
            (slice(None, None, -1),),
            (slice(None, None, 0),),
            1.5,
            "a",
            (0, True),
            (True,),
            (False,),
            (None, False),
            (0, T.tensor(True)),
            [0, 1],
            [[0, 1], [1, 2]],
            [slice(1, 3), 0],
            [None, 0],
        ):
            r = g.run(operator.getitem, t, key)
            out.append([r] if isinstance(r, Raised) else [r, r.is_contiguous(), *view_of(T, r, t)])
    z = g.tensor(())
    out += [z[...], z[None], z[()], g.run(operator.getitem, z, 0), z[None, ..., None]]
    return out


@case
def getitem_advanced(T, g):
    out = []
    base = g.tensor((5, 6, 7), "float32")
    idx64 = T.tensor([0, 3, -1, 2], dtype=T.int64)
    idx32 = T.tensor([4, 1], dtype=T.int32)
    i2d = T.tensor([[0, 1], [2, -2]])
    mask = T.tensor([True, False, True, True, False])
    mask2 = g.tensor((5, 6), "bool")
    keys = [
        idx64,
        idx32,
        i2d,
        [0, 2],
        [[1], [3]],
        mask,
        mask2,
        (idx64, idx64),
        (i2d, i2d),
        (i2d, T.tensor([0, 1])),
        (idx32, slice(1, 4)),
        (slice(None), idx32),
        (slice(None), slice(None), idx64),
        (1, slice(None), idx64),
        (idx32, 2),
        (idx64, None, idx64),
        (Ellipsis, idx32),
        (None, idx32),
        (mask, slice(2)),
        (slice(1, 3), mask2[:6, :6][0]),
        (T.tensor([], dtype=T.int64),),
        ([],),
        (T.tensor([0.0]),),
        (T.tensor([1], dtype=T.int8),),
        (T.tensor([5]),),
        (T.tensor([-6]),),
        (T.tensor([True, False]),),
        (T.tensor([1, 0, 1, 0, 1], dtype=T.uint8),),
        (idx64, idx32),
        ([True, False, True, False, False],),
        (mask2, 1),
        (idx64, mask2[0]),
        [[1, 2], [0, 3]],
        [idx64],
        (idx64, True),
        (T.tensor(False), idx32),
    ]
    for t in (base, base.permute(0, 2, 1)[:, :, :6].transpose(1, 2)):
        for key in keys:
            r = g.run(operator.getitem, t, key)
            out.append(r)
            if not isinstance(r, Raised):
                r.fill_(1e6)
                r = t.sum()  # advanced indexing copies: the base is untouched
            out.append(r)
    ids = T.tensor([2, 0], dtype=T.int32)
    out += [g.tensor((6,), "int32")[ids], g.tensor((3, 4), "int64")[T.tensor([[0, 1], [1, 2]]), :2]]
    return out


@case
def setitem_case(T, g):
    out = []
    items = [
        (0, 5.0),
        (-1, T.tensor(2.5)),
        (slice(1, 3), T.tensor([1.0, 2.0, 3.0, 4.0])),
        ((slice(None), 0), 7),
        ((Ellipsis, 1), T.tensor([9.0, 8.0, 7.0])),
        (slice(None, None, 2), T.tensor([[1.0], [2.0]])),
        ((1, slice(1, 4)), T.tensor([1, 2, 3], dtype=T.int32)),
        (T.tensor([0, 2]), -1.0),
        (T.tensor([0, 2]), T.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])),
        ((T.tensor([0, 1]), T.tensor([3, 0])), 4.0),
        ((T.tensor([[0], [2]]), T.tensor([[1, 2]])), T.tensor([[10.0, 20.0], [30.0, 40.0]])),
        (T.tensor([True, False, True]), 0.5),
        (T.tensor([[True, False, True, False]] * 3), T.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
        (T.tensor([1, 1]), T.tensor([3.0, 3.0, 3.0, 3.0])),
        ((T.tensor([2, 0]), slice(None, 2)), T.tensor([[1.0, 2.0]])),
        (T.tensor([0, 1]), T.tensor([1, 2, 3, 4])),
        (T.tensor([0, 1]), T.tensor(5)),
        (slice(0, 2), T.tensor([1.0, 2.0, 3.0])),
        (T.tensor([0, 1]), T.tensor([1.0, 2.0, 3.0])),
        (5, 1.0),
        (0, [1, 2]),
        (T.tensor([0.0]), 1.0),
        (None, 3.0),
        ((T.tensor([1], dtype=T.int32), 2), T.tensor([6.5])),
        (T.tensor([True, True, True]), T.tensor([[1.0, 2.0, 3.0, 4.0]])),
        ((), 1.0),
        (Ellipsis, T.tensor([1.0, 2.0, 3.0, 4.0])),
        (slice(None, None, -1), 1.0),
        (0, True),
        (1, 2),
        ((slice(None), T.tensor([3, -4])), T.tensor([[1.0], [2.0], [3.0]])),
    ]
    for dst in ("float32", "int32", "int64"):
        for key, value in items:
            t = g.tensor((3, 4), dst)
            if dst != "float32" and isinstance(value, T.Tensor) and value.dtype == T.float32:
                value = value.to(getattr(T, dst))
            out.append(g.run(operator.setitem, t, key, value))
            out.append(t)
    # through views: a write into a view of a view shows in the base
    b = g.tensor((4, 5), "int64")
    b[1:][T.tensor([0, 2])] = T.tensor([1, 2, 3, 4, 5])
    b[:, 1:4][T.tensor([True, False, True, False])] = 0
    b.t()[0][1:3] = T.tensor([-5, -6])
    out.append(b)
    z = g.tensor((), "float32")
    z[...] = 3.0
    out.append(z)
    z[()] = T.tensor(4.0)
    out.append(z)
    # the KV store: k_cache[loc] = k, with a duplicate slot (padded dummy requests) holding the same value
    cache = T.zeros(10, 2, 3)
    loc = T.tensor([7, 2, 9, 9], dtype=T.int32).long()
    k = g.tensor((4, 2, 3))
    k[3] = k[2]
    cache[loc] = k
    out.append(cache)
    return out


@case
def copy_fill_zero(T, g):
    out = []
    for dst in ("float32", "int32", "int64", "bool"):
        for src_shape, src_dt in (
            ((3, 4), "float32"),
            ((1, 4), "int64"),
            ((4,), "int32"),
            ((3, 1), "bool"),
            ((), "float64"),
            ((2, 4), "float32"),
            ((4, 3), "int32"),
        ):
            t = g.tensor((3, 4), dst)
            src = g.tensor(src_shape, src_dt)
            if src_dt.startswith("float") and dst != "float32":
                src = src.abs()
            r = g.run(t.copy_, src)
            out += [r is t if not isinstance(r, Raised) else r, t]
    t = g.tensor((3, 4), "int32")
    out += [g.run(t.copy_, 5), t, g.run(t.copy_, 2.5), t, g.run(t.copy_, [1, 2, 3, 4])]
    base = g.tensor((4, 4), "int32")
    base[1:3, ::2].copy_(T.tensor([[1, 2], [3, 4]], dtype=T.int32))
    base.t()[0].copy_(T.tensor([9, 9, 9, 9], dtype=T.int32), non_blocking=True)
    out.append(base)
    for value in (3, 2.7, True, T.tensor(5), T.tensor(1.5), T.tensor([1, 2])):
        for dt in ("float32", "int32", "bool"):
            t = g.tensor((2, 3), dt)
            r = g.run(t.fill_, value)
            out += [r is t if not isinstance(r, Raised) else r, t]
    t = g.tensor((3, 3))
    t[1].fill_(8.0)
    t[:, 2].zero_()
    out += [t, t.zero_() is t, t]
    return out


# ----------------------------------------------------------------------------------------------
# elementwise arithmetic and dtype promotion


def _operands(T, g):
    """(label, operand): dimensioned tensors of every dtype, 0-d tensors, Python scalars."""
    ops = []
    for dt in ALL_DTYPES:
        ops.append((dt, g.tensor((3, 1), dt, lo=1, hi=5)))
        ops.append(("0d-" + dt, g.tensor((), dt, lo=1, hi=5)))
    ops += [
        ("int", 3),
        ("neg-int", -2),
        ("float", 1.5),
        ("py-bool", True),
        ("row", g.tensor((1, 4), "float32", 1, 5)),
        ("empty", g.tensor((0, 1), "int32", 1, 3)),
    ]
    return ops


_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
}


@case(tol=2e-3)
def arithmetic_promotion(T, g):
    out = []
    ops = _operands(T, g)
    for name, fn in _BINARY.items():
        for la, a in ops:
            for lb, b in ops:
                if not isinstance(a, T.Tensor) and not isinstance(b, T.Tensor):
                    continue
                out.append((name, la, lb, g.run(fn, a, b)))
    return out


@case(tol=2e-3)
def arithmetic_methods(T, g):
    out = []
    a, b = g.tensor((3, 4), "float32"), g.tensor((4,), "float32", 1, 3)
    i, j = g.tensor((3, 4), "int32", -9, 9), g.tensor((4,), "int64", 1, 4)
    for x, y in ((a, b), (i, j), (a, j), (i, 2), (a, 0.5), (i, 2.5), (g.tensor((2,), "bool"), True)):
        out += [
            g.run(x.add, y),
            g.run(x.sub, y),
            g.run(x.mul, y),
            g.run(x.div, y),
            g.run(x.pow, y if not isinstance(y, float) else 2),
        ]
        for mode in (None, "floor", "trunc", "round"):
            out.append(g.run(x.div, y, rounding_mode=mode))
        out += [g.run(x.add, y, alpha=1), g.run(x.sub, y, alpha=1)]
    out += [
        g.run(i.div, 0),
        g.run(i.div, 0, rounding_mode="floor"),
        g.run(i.div, 0, rounding_mode="trunc"),
        g.run(operator.mod, i, 0),
        g.run(operator.floordiv, i, T.tensor([0, 1, 1, 1])),
        a // 0,
        a % 0.0,
        i / 0,
    ]
    out += [
        g.run(i.pow, -1),
        g.run(operator.pow, 2, T.tensor([-1, 2])),
        2 ** T.tensor([1, 3]),
        2.0**i,
        10000.0 ** (T.arange(0, 8, 2).float() / 8),
    ]
    out += [1.0 / a, 3 - i, 2 * i, 1 + a, 7 // j, 7 % j, -7 // j, -7.5 % b]
    return out


@case
def inplace_arithmetic(T, g):
    out = []
    for dst in ("float32", "int32", "int64", "bool"):
        for other in (
            2,
            1.5,
            True,
            g.tensor((4,), "int64", 1, 3),
            g.tensor((3, 4), "float32"),
            g.tensor((2, 3, 4), "int32", 1, 2),
        ):
            for name in ("iadd", "isub", "imul", "itruediv", "ifloordiv"):
                t = g.tensor((3, 4), dst, lo=1, hi=5)
                r = g.run(getattr(operator, name), t, other)
                out += [name, r is t if not isinstance(r, Raised) else r, t]
            for name in ("add_", "sub_", "mul_", "div_"):
                t = g.tensor((3, 4), dst, lo=1, hi=5)
                r = g.run(getattr(t, name), other)
                out += [name, r is t if not isinstance(r, Raised) else r, t]
    t = g.tensor((3, 4), "float32")
    t.div_(2, rounding_mode="floor")
    v = t[1:, ::2]
    v += 10
    v *= 2
    t[0] -= t[1]
    out.append(t)
    return out


@case
def comparisons(T, g):
    out = []
    ops = _operands(T, g)
    names = ("eq", "ne", "lt", "le", "gt", "ge")
    for la, a in ops:
        for lb, b in ops:
            if isinstance(a, T.Tensor):
                for n in names:
                    out.append((n, la, lb, g.run(getattr(a, n), b)))
            if isinstance(a, T.Tensor) or isinstance(b, T.Tensor):
                for fn in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge):
                    out.append((fn.__name__, la, lb, g.run(fn, a, b)))
    nan = T.tensor([float("nan"), 1.0, float("inf")])
    out += [nan == nan, nan != nan, nan < 2, nan >= float("-inf"), T.zeros(2) == None, T.zeros(2) != "a"]  # noqa: E711
    return out


@case
def bitwise_ops(T, g):
    out = []
    for da in ("bool", "int32", "int64", "uint8", "float32"):
        a = g.tensor((2, 3), da, 0, 6)
        out.append(g.run(operator.invert, a))
        for b in (g.tensor((2, 3), "bool"), g.tensor((3,), "int32", 0, 6), True, 3, 1.5):
            for fn in (operator.and_, operator.or_, operator.xor):
                out += [g.run(fn, a, b), g.run(fn, b, a)]
    return out


@case
def unary_math(T, g):
    out = []
    special = T.tensor([0.0, -1.0, 1.0, float("inf"), float("-inf"), float("nan"), 1e-30, 100.0])
    for t in (
        [g.tensor((3, 4), dt, -3, 3) for dt in ALL_DTYPES] + [special, g.tensor(()), g.tensor((0,))] + g.layouts((2, 3))
    ):
        for name in ("neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos"):
            out.append(g.run(getattr(t, name)))
        for fn in (T.abs, T.exp, T.log, T.sqrt, T.rsqrt, T.sin, T.cos):
            out.append(g.run(fn, t))
        out += [g.run(operator.neg, t), g.run(operator.abs, t)]
    return out


@case
def clamp_maximum_minimum(T, g):
    out = []
    t = g.tensor((3, 4), "float32")
    i = g.tensor((3, 4), "int32", -9, 9)
    for x in (t, i, T.tensor([float("nan"), 1.0, -5.0])):
        for lo, hi in (
            (0, None),
            (None, 1),
            (-1, 1),
            (2, -2),
            (0.5, None),
            (T.tensor(0), None),
            (None, T.tensor([1.0, 2.0, 3.0, 4.0])),
            (T.tensor([0, 1, 2, 3]), T.tensor(2)),
            (None, None),
        ):
            out += [g.run(x.clamp, lo, hi), g.run(T.clamp, x, min=lo, max=hi), g.run(x.clamp, min=lo)]
    for a, b in (
        (t, g.tensor((4,))),
        (i, g.tensor((3, 1), "int64")),
        (t, i),
        (T.tensor([float("nan"), 2.0]), T.tensor([1.0, float("nan")])),
        (i, g.tensor((2,), "int32")),
        (t, 1),
        (1.0, t),
    ):
        out += [g.run(T.maximum, a, b), g.run(T.minimum, a, b)]
    return out


@case
def where_case(T, g):
    out = []
    c = g.tensor((3, 4), "bool")
    for x, y in (
        (g.tensor((3, 4)), g.tensor((4,))),
        (1, 2),
        (1, 2.5),
        (g.tensor((3, 1), "int32"), 2),
        (g.tensor((4,), "int64"), g.tensor((3, 4), "float32")),
        (True, False),
        (g.tensor((2,)), 1.0),
    ):
        out.append(g.run(T.where, c, x, y))
    out += [T.where(c), T.where(T.tensor(True)), g.run(T.where, T.tensor([1, 0]), 1, 2), g.run(T.where, [True], 1, 2)]
    return out


@case
def isclose_allclose_equal(T, g):
    out = []
    a = g.tensor((3, 4))
    b = a + T.tensor([0.0, 1e-6, 1e-3, 1.0])
    nan = T.tensor([float("nan"), float("inf"), float("-inf"), 1.0])
    for x, y in (
        (a, b),
        (a, a),
        (nan, nan),
        (nan, T.tensor([float("nan"), float("inf"), float("inf"), 1.0])),
        (g.tensor((3,), "int64"), g.tensor((3,), "int64")),
        (T.tensor([True, False]), T.tensor([True, True])),
        (a, b.double()),
        (a, g.tensor((4,))),
    ):
        for kw in ({}, {"rtol": 1e-3}, {"atol": 0.5}, {"equal_nan": True}, {"rtol": 0, "atol": 0}):
            out.append(g.run(T.isclose, x, y, **kw))
            r = g.run(T.allclose, x, y, **kw)
            out.append((r, type(r).__name__))
    for x, y in (
        (a, a.clone()),
        (a, b),
        (a, a[:2]),
        (T.tensor([1, 2]), T.tensor([1, 2], dtype=T.int32)),
        (T.tensor([1, 2]), T.tensor([1.0, 2.0])),
        (nan, nan),
        (T.zeros(0), T.zeros(0, 1)),
        (a, a.t().t()),
        (T.zeros(0), T.zeros(0)),
    ):
        r = T.equal(x, y)
        out.append((r, type(r).__name__))
    out += [g.run(T.equal, a, [1]), g.run(T.isclose, a, 1.0)]
    return out


@case(tol=1e-4)
def matmul_and_linear(T, g):
    out = []
    F = T.nn.functional
    for sa, sb in (
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((2, 1, 2, 3), (4, 3, 2)),
        ((0, 3), (3, 2)),
        ((2, 3), (4, 2)),
        ((), (3,)),
    ):
        for dt in ("float32", "float64", "int64"):
            out.append(g.run(T.matmul, g.tensor(sa, dt), g.tensor(sb, dt)))
            out.append(g.run(operator.matmul, g.tensor(sa, dt), g.tensor(sb, dt)))
    out += [
        g.run(T.matmul, g.tensor((2, 2)), g.tensor((2, 2), "float64")),
        g.run(T.matmul, g.tensor((2, 2), "bool"), g.tensor((2, 2), "bool")),
    ]
    for x in g.layouts((4, 6)) + [g.tensor((2, 3, 6)), g.tensor((6,))]:
        for w in g.layouts((5, 6)):
            out += [F.linear(x, w), F.linear(x, w, g.tensor((5,)))]
    out.append(g.run(F.linear, g.tensor((2, 3)), g.tensor((4, 5))))
    return out


# ----------------------------------------------------------------------------------------------
# reductions, sorting


@case(tol=1e-4)
def sum_and_mean(T, g):
    out = []
    for t in (
        [g.tensor((3, 4, 5), dt) for dt in DTYPES]
        + g.layouts((3, 4))
        + [g.tensor(()), g.tensor((0, 3)), g.tensor((2, 0), "int32")]
    ):
        n = t.dim()
        dims = [None, (), (0, -1), [0]] + list(range(-n, n)) + [n]
        for d in dims:
            for keep in (False, True):
                out.append(g.run(t.sum, d, keep) if d is not None else g.run(t.sum))
                out.append(g.run(T.sum, t, d, keepdim=keep) if d is not None else g.run(T.sum, t))
                out.append(g.run(t.mean, d, keep) if d is not None else g.run(t.mean))
                out.append(g.run(T.mean, t, d, keepdim=keep) if d is not None else g.run(T.mean, t))
        out += [g.run(t.sum, dtype=T.float64), g.run(t.mean, dtype=T.float64), g.run(t.sum, dim=(0, 0))]
    return out


@case
def max_min_argmax(T, g):
    out = []
    tensors = [g.distinct((3, 4, 5), dt) for dt in ("float32", "int64", "int32")] + [
        g.tensor((3, 4), "int32", 0, 2),
        g.tensor((4,), "bool"),
        g.tensor(()),
        g.tensor((0, 3)),
        T.tensor([1.0, float("nan"), 3.0, float("nan")]),
    ]
    tensors += g.layouts((3, 4))
    for t in tensors:
        n = t.dim()
        out += [
            g.run(t.max),
            g.run(t.min),
            g.run(T.max, t),
            g.run(T.min, t),
            g.run(t.argmax),
            g.run(T.argmax, t),
            g.run(t.argmax, None, True),
        ]
        for d in list(range(-n, n)) + [n]:
            for keep in (False, True):
                for fn in (t.max, t.min, lambda *a, **k: T.max(t, *a, **k), lambda *a, **k: T.min(t, *a, **k)):
                    r = g.run(fn, d, keep)
                    if isinstance(r, Raised):
                        out.append([r])
                    else:
                        values, indices = r
                        out.append([values, indices, r.values, r.indices, isinstance(r, tuple), len(r)])
                out += [g.run(t.argmax, d, keep), g.run(T.argmax, t, dim=d, keepdim=keep)]
    a, b = g.tensor((3, 4)), g.tensor((4,))
    out += [T.max(a, b), T.min(a, b), a.max(b), g.run(a.min, dim=b), a.min(b)]
    return out


@case
def all_any(T, g):
    out = []
    for t in [g.tensor((3, 4), dt, 0, 1) for dt in DTYPES] + [
        T.ones(3, dtype=T.bool),
        g.tensor(()),
        g.tensor((0, 2), "bool"),
    ]:
        n = t.dim()
        out += [t.all(), t.any()]
        for d in range(-n, n):
            out += [t.all(d), t.any(d), t.all(d, True), t.any(dim=d, keepdim=True)]
    return out


@case(tol=1e-6)
def cumsum_case(T, g):
    out = []
    for t in (
        [g.tensor((3, 5), dt) for dt in DTYPES]
        + g.layouts((4, 3))
        + [g.tensor(()), g.tensor((0, 2)), g.tensor((2000,), "float32", 0, 1)]
    ):
        n = t.dim()
        for d in list(range(-n, n)) + [n]:
            out += [g.run(t.cumsum, d), g.run(T.cumsum, t, dim=d), g.run(t.cumsum, d, dtype=T.float64)]
    return out


@case(tol=2e-6)
def softmax_case(T, g):
    out = []
    F = T.nn.functional
    ninf = float("-inf")
    rows = T.tensor([[1.0, 2.0, ninf], [ninf, ninf, ninf], [0.0, 0.0, 0.0], [1000.0, 0.0, -1000.0]])
    for t in [g.tensor((3, 5)), g.tensor((2, 3, 4), "float64"), rows, g.tensor(()), g.tensor((0, 3))] + g.layouts(
        (4, 3)
    ):
        n = t.dim()
        for d in list(range(-n, n)) + [n]:
            out += [
                g.run(T.softmax, t, d),
                g.run(t.softmax, d),
                g.run(F.softmax, t, dim=d),
                g.run(T.softmax, t, dim=d, dtype=T.float64),
            ]
    out += [g.run(T.softmax, g.tensor((3,), "int32"), 0), T.softmax(g.tensor((3,), "int32"), 0, dtype=T.float32)]
    return out


@case
def sort_and_topk(T, g):
    out = []
    nan = T.tensor([3.0, float("nan"), 1.0, float("inf"), -2.0])
    tensors = [
        g.distinct((4, 6), "float32"),
        g.distinct((3, 5), "int32"),
        nan,
        g.tensor(()),
        g.tensor((0, 3)),
    ] + g.layouts((3, 4))
    for t in [g.tensor((4, 6), "int64", 0, 3), g.tensor((9,), "bool"), g.tensor((5, 3), "float32", 0, 2)]:
        for d in (0, 1, -1):  # ties: torch's stable sort keeps them in order (topk's order among ties is unspecified)
            for desc in (False, True):
                r = g.run(t.sort, dim=d, descending=desc, stable=True)
                out.append([r.values, r.indices] if not isinstance(r, Raised) else [r])
    for t in tensors:
        n = t.dim()
        for d in list(range(-n, n)) + [n]:
            for desc in (False, True):
                for stable in (False, True):
                    r = g.run(t.sort, dim=d, descending=desc, stable=stable)
                    out.append([r.values, r.indices, isinstance(r, tuple)] if not isinstance(r, Raised) else [r])
                r = g.run(T.sort, t, dim=d, descending=desc)
                out.append([*r] if not isinstance(r, Raised) else [r])
            size = t.shape[d] if n and -n <= d < n else 1
            for k in (0, 1, size, size + 1):
                for largest in (True, False):
                    r = g.run(T.topk, t, k, d, largest)
                    out.append([r.values, r.indices, *r] if not isinstance(r, Raised) else [r])
                    r = g.run(t.topk, k, dim=d, largest=largest, sorted=True)
                    out.append([r.values, r.indices] if not isinstance(r, Raised) else [r])
    return out


# ----------------------------------------------------------------------------------------------
# gather, scatter, masks, nonzero


@case
def gather_scatter(T, g):
    out = []
    src = g.tensor((3, 5))
    for dim, index in (
        (0, T.tensor([[0, 1, 2, 0, 1], [2, 2, 1, 0, 0]])),
        (1, T.tensor([[4, 0], [1, 1], [3, 2]])),
        (-1, T.tensor([[1], [0]], dtype=T.int32)),
        (1, T.tensor([[5]])),
        (1, T.tensor([[-1]])),
        (0, T.tensor([[0.0]])),
        (1, T.tensor([1, 2])),
        (0, T.zeros(0, 2, dtype=T.int64)),
        (1, T.tensor([[0, 1, 2, 3, 4, 0]])),
    ):
        out += [g.run(src.gather, dim, index), g.run(T.gather, src, dim, index)]
        for s in (g.tensor((3, 5)), g.tensor((4, 6)), 2.5, g.tensor((3, 5), "float64"), 7):
            t = g.tensor((3, 5))
            r = g.run(t.scatter_, dim, index, s)
            out += [r is t if not isinstance(r, Raised) else r, t]
    out += [g.run(T.gather, g.tensor(()), 0, T.tensor(0))]
    # the sampler's pattern: keep the top-k probabilities, zero elsewhere
    p = T.softmax(g.distinct((12,)), dim=-1)
    top = T.topk(p, 4)
    out.append(T.zeros_like(p).scatter_(-1, top.indices, top.values))
    base = g.tensor((4, 5))
    base[1:3].scatter_(1, T.tensor([[0, 4], [2, 2]]), T.tensor([[1.0, 2.0], [3.0, 3.0]]))
    out.append(base)
    return out


@case
def masked_fill_case(T, g):
    out = []
    scores = g.tensor((2, 3, 4, 5))
    allowed = T.arange(5)[None, :] <= T.arange(1, 5)[:, None]
    for t, mask, value in (
        (scores, ~allowed, float("-inf")),
        (scores, allowed, 0.0),
        (g.tensor((3, 4), "int32"), g.tensor((3, 4), "bool"), 2.7),
        (g.tensor((3, 4)), g.tensor((4,), "bool"), T.tensor(9.0)),
        (g.tensor((4,)), g.tensor((3, 4), "bool"), 1.0),
        (g.tensor((3, 4)), g.tensor((3, 4), "int64", 0, 1), 1.0),
        (g.tensor((3, 4)), g.tensor((2,), "bool"), 1.0),
        (g.tensor((3,)), g.tensor((3,), "bool"), T.tensor([1.0])),
        (g.tensor(()), T.tensor(True), 5.0),
    ):
        before = t.clone()
        out += [g.run(t.masked_fill, mask, value), T.equal(t, before)]
        c = t.clone()
        r = g.run(c.masked_fill_, mask, value)
        out += [r is c if not isinstance(r, Raised) else r, c]
    base = g.tensor((4, 4))
    base[:, 1:3].masked_fill_(T.tensor([True, False]), -1.0)
    out.append(base)
    return out


@case
def nonzero_case(T, g):
    out = []
    for t in (
        g.tensor((7,), "bool"),
        g.tensor((3, 4), "int32", 0, 2),
        g.tensor((2, 3, 2), "float32", 0, 1),
        T.tensor(5),
        T.tensor(0.0),
        T.zeros(0),
        T.zeros(2, 0),
        g.layouts((3, 3), "int64")[1],
    ):
        out += [t.nonzero(), T.nonzero(t), t.nonzero(as_tuple=True), T.nonzero(t, as_tuple=True)]
    a, b = T.tensor([1, 2, 3, 4], dtype=T.int32), T.tensor([1, 0, 3, 5], dtype=T.int32)
    out.append((a != b).nonzero().tolist())
    return out


# ----------------------------------------------------------------------------------------------
# joining, flipping, repeating


@case
def cat_and_stack(T, g):
    out = []
    a, b = g.tensor((2, 3)), g.tensor((4, 3))
    for ts, dim in (
        ([a, b], 0),
        ((a, a), 1),
        ([a, a, a], -1),
        ([a, b], 1),
        ([a, g.tensor((2, 3), "int32")], 0),
        ([g.tensor((3,), "int32"), g.tensor((2,), "int64")], 0),
        ([T.tensor([]), a], 0),
        ([T.tensor([], dtype=T.int64), g.tensor((2,), "int32")], 0),
        ([a], 0),
        ([], 0),
        ([g.tensor(())], 0),
        ([a, a.t()], 0),
        ([a.t(), a.t()], 1),
        ([a, "x"], 0),
        (a, 0),
        ([g.tensor((2, 0)), g.tensor((2, 1))], 1),
        ([a, a], 2),
        ([g.tensor((2,), "bool"), g.tensor((1,), "bool")], 0),
        ([g.tensor((1, 2, 3)), g.tensor((1, 2, 3))], -2),
    ):
        out += [g.run(T.cat, ts, dim), g.run(T.cat, ts, dim=dim) if dim == 0 else g.run(T.cat, ts)]
        out += [g.run(T.stack, ts, dim), g.run(T.stack, ts)]
    out += [
        g.run(T.stack, [a, a], 2),
        g.run(T.stack, [a, a], -3),
        g.run(T.stack, [a, a], 3),
        g.run(T.stack, [g.tensor(()), g.tensor(())]),
    ]
    return out


@case
def flip_and_repeat_interleave(T, g):
    out = []
    for t in g.layouts((3, 4), "int64") + [g.tensor(()), g.tensor((2, 3, 2))]:
        n = t.dim()
        for dims in ([0], [-1], [0, 1], (1, 0), [0, 0], [n], []):
            out.append(g.run(t.flip, dims))
            out.append(g.run(T.flip, t, dims))
            if len(dims) == 1:
                out.append(g.run(t.flip, *dims))
        f = t.flip(list(range(n)))
        f.fill_(0)  # flip copies
        out.append(t)
        for reps in (2, 0, T.tensor(3), T.tensor([1, 0, 2]), T.tensor([1, 2, 3, 4]), -1, T.tensor([1.0, 2.0, 3.0])):
            for dim in (None, 0, 1, -1):
                out.append(g.run(t.repeat_interleave, reps, dim))
                out.append(g.run(T.repeat_interleave, t, reps, dim=dim))
    out.append(g.run(g.tensor((3,)).repeat_interleave, 2, output_size=6))
    out.append(g.run(g.tensor((3,)).repeat_interleave, 2, output_size=5))
    return out


# ----------------------------------------------------------------------------------------------
# nn.functional


@case(tol=1e-5)
def functional_embedding_silu(T, g):
    F = T.nn.functional
    out = []
    w = g.tensor((10, 4))
    for ids in (
        T.tensor([3, 0, 9]),
        T.tensor([[1, 2], [2, 1]], dtype=T.int32),
        T.tensor(4),
        T.tensor([10]),
        T.tensor([-1]),
        T.tensor([1.0]),
        T.zeros(0, dtype=T.int64),
    ):
        out += [g.run(F.embedding, ids, w), g.run(F.embedding, ids, w, padding_idx=0)]
    for x in g.layouts((4, 6)) + [
        T.tensor([-100.0, -1.0, 0.0, 1.0, 100.0]),
        g.tensor((), "float64"),
        g.tensor((3,), "int32"),
    ]:
        out.append(g.run(F.silu, x))
        c = x.clone()
        r = g.run(F.silu, c, inplace=True)
        out += [r is c if not isinstance(r, Raised) else r, c]
    return out


@case(tol=1e-4)
def scaled_dot_product_attention(T, g):
    F = T.nn.functional
    sdpa = F.scaled_dot_product_attention
    out = []
    q, k, v = g.tensor((2, 4, 3, 8)), g.tensor((2, 4, 5, 8)), g.tensor((2, 4, 5, 6))
    lens = T.tensor([2, 5])
    valid = T.arange(5)[None, :] < lens[:, None]
    out += [
        sdpa(q, k, v),
        sdpa(q, k, v, scale=0.3),
        sdpa(q, k, v, is_causal=True),
        sdpa(q, k[:, :, :3], v[:, :, :3], is_causal=True),
        sdpa(q, k, v, attn_mask=valid[:, None, None, :]),
        sdpa(q, k, v, attn_mask=g.tensor((3, 5))),
        sdpa(q, k, v, attn_mask=T.zeros(2, 1, 3, 5, dtype=T.bool)),
        sdpa(q[0], k[0], v[0]),
        sdpa(q, k, v, dropout_p=0.0),
    ]
    kv_k, kv_v = g.tensor((2, 2, 5, 8)), g.tensor((2, 2, 5, 8))
    out += [
        sdpa(q, kv_k, kv_v, enable_gqa=True),
        sdpa(q, kv_k, kv_v, attn_mask=valid[:, None, None, :], scale=0.25, enable_gqa=True),
        g.run(sdpa, q, kv_k, kv_v),
        g.run(sdpa, q, g.tensor((2, 3, 5, 8)), g.tensor((2, 3, 5, 8)), enable_gqa=True),
        g.run(sdpa, q, k, v, attn_mask=valid[:, None, None, :], is_causal=True),
        g.run(sdpa, q.double(), k, v),
    ]
    # the engine's padded decode: one query per request, keys past seq_len masked
    qd, kd, vd = g.tensor((3, 4, 8)), g.tensor((3, 6, 2, 8)), g.tensor((3, 6, 2, 8))
    seq = T.tensor([1, 6, 3], dtype=T.int32)
    ok = T.arange(6)[None, :] < seq[:, None].to(T.int64)
    out.append(
        sdpa(
            qd[:, :, None, :],
            kd.transpose(1, 2),
            vd.transpose(1, 2),
            attn_mask=ok[:, None, None, :],
            scale=0.25,
            enable_gqa=True,
        ).reshape(3, 4, 8)
    )
    return out


# ----------------------------------------------------------------------------------------------
# random


@case
def generator_and_multinomial(T, g):
    out = []
    gen = T.Generator()
    out += [T.Generator().initial_seed(), T.default_generator.initial_seed() != T.Generator().initial_seed()]
    out += [
        gen.manual_seed(7) is gen,
        gen.initial_seed(),
        str(T.Generator(device="cpu").device),
        str(T.Generator(device=T.device("cpu")).device),
        T.Generator().manual_seed(3).initial_seed(),
    ]
    p = T.tensor([0.1, 0.0, 0.2, 0.3, 0.0, 0.4])
    p2 = T.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 2.0]])
    for probs in (p, p2, T.tensor([0.0, 3.0, 0.0])):
        for n, repl in ((1, False), (2, False), (3, True), (6, True)):
            r = g.run(T.multinomial, probs, n, repl, generator=T.Generator().manual_seed(5))
            if isinstance(r, Raised):
                out.append([r])
                continue
            a = T.multinomial(probs, n, repl, generator=T.Generator().manual_seed(11))
            b = T.multinomial(probs, n, repl, generator=T.Generator().manual_seed(11))
            support = bool((probs.reshape(-1, probs.shape[-1]).gather(1, r.reshape(-1, n)) > 0).all())
            out.append([r.shape, r.dtype, support, T.equal(a, b)])  # the same seed, the same draws
    out.append(T.multinomial(T.tensor([0.0, 0.0, 1.0, 0.0]), 1, generator=gen))  # a certain outcome: the same in both
    out.append(T.multinomial(T.tensor([[1.0, 0.0], [0.0, 1.0]]), 1))
    no_repl = T.multinomial(T.tensor([1.0, 2.0, 3.0, 4.0]), 4, generator=gen)
    out.append(sorted(no_repl.tolist()))
    out.append(T.multinomial(T.tensor([0.0, 1.0]), 2).tolist())  # exhausted: then the zero-probability one
    counts = [0, 0, 0, 0]
    draws = T.multinomial(T.tensor([0.1, 0.2, 0.3, 0.4]), 4000, True, generator=T.Generator().manual_seed(1))
    for i in draws.tolist():
        counts[i] += 1
    out.append(all(abs(c / 4000 - q) < 0.03 for c, q in zip(counts, (0.1, 0.2, 0.3, 0.4))))
    singles = [T.multinomial(T.tensor([0.1, 0.2, 0.3, 0.4]), 1, generator=gen).item() for _ in range(2000)]
    out.append(all(abs(singles.count(i) / 2000 - q) < 0.04 for i, q in enumerate((0.1, 0.2, 0.3, 0.4))))
    # two generators are two streams: interleaving does not change either
    g1, g2 = T.Generator().manual_seed(3), T.Generator().manual_seed(3)
    pp = T.softmax(g.tensor((50,)), dim=-1)
    alone = [T.multinomial(pp, 1, generator=g1).item() for _ in range(5)]
    mixed = []
    other = T.Generator().manual_seed(99)
    for _ in range(5):
        T.multinomial(pp, 1, generator=other)
        mixed.append(T.multinomial(pp, 1, generator=g2).item())
    out.append(alone == mixed)
    T.manual_seed(123)
    x = T.multinomial(pp, 3)
    out.append(type(T.manual_seed(123)).__name__)
    out.append(T.equal(T.multinomial(pp, 3), x))
    for bad in (
        (T.tensor([-0.1, 1.0]), 1),
        (T.tensor([float("nan"), 1.0]), 1),
        (T.tensor([float("inf"), 1.0]), 1),
        (T.tensor([0.0, 0.0]), 1),
        (T.zeros(2, 2, 2) + 1, 1),
        (T.tensor([1.0, 1.0]), 3),
        (T.tensor([1, 1]), 1),
        (T.tensor([1.0]), 0),
        (T.tensor(1.0), 1),
    ):
        out.append(g.run(T.multinomial, *bad))
    return out


# ----------------------------------------------------------------------------------------------
# modes, cuda, threads, version


@case
def grad_modes(T, g):
    out = []
    with T.inference_mode():
        out.append(T.ones(2) * 2)
    with T.inference_mode(False):
        out.append(T.ones(1))
    with T.no_grad():
        out.append(T.zeros(1))

    @T.inference_mode()
    def f(x):
        """doc"""
        return x + 1

    @T.inference_mode
    def h(x):
        return x * 3

    @T.no_grad()
    def k(x):
        return x - 1

    out += [f(T.tensor([1])), f.__name__, f.__doc__, h(T.tensor([2])), h.__name__, k(T.tensor([3])), k.__name__]
    with T.inference_mode() as ctx:
        out.append(ctx is None)
    return out


@case
def cuda_module(T, g):
    out = [
        T.cuda.is_available(),
        T.cuda.device_count(),
        isinstance(object(), T.cuda.Stream),
        isinstance(3, T.cuda.Event),
    ]
    out += [g.run(T.cuda.Stream), g.run(T.cuda.Event), g.run(T.cuda.Stream, T.device("cuda"))]
    return out


@case
def threads_and_version(T, g):
    before = T.get_num_threads()
    T.set_num_threads(2)
    out = [type(before).__name__, T.get_num_threads(), g.run(T.set_num_threads, 0), g.run(T.set_num_threads, -3)]
    T.set_num_threads(before)
    out += [T.get_num_threads() == before, isinstance(T.__version__, str), T.__version__.split(".")[0] >= "2"]
    out += [
        isinstance(T.zeros(1), T.Tensor),
        type(T.zeros(1)).__module__,
        T.Tensor.__module__,
        type(T.zeros(1)).__name__,
    ]
    return out


# ----------------------------------------------------------------------------------------------
# the engine's own expressions, end to end


@case(tol=1e-5)
def engine_patterns(T, g):
    F = T.nn.functional
    out = []
    # RoPE table and rotate-half
    inv = 1.0 / (10000.0 ** (T.arange(0, 16, 2, dtype=T.int64).float() / 16))
    t = T.arange(12, dtype=T.int64).float()
    emb = T.cat((t[:, None] * inv[None, :], t[:, None] * inv[None, :]), dim=-1)
    cos, sin = emb.cos().to(dtype=T.float32, device="cpu"), emb.sin()
    pos = T.tensor([3, 0, 11, 5], dtype=T.int32).long()
    c, s = cos[pos][:, None, :], sin[pos][:, None, :]
    q = g.tensor((4, 2, 16))
    rot = T.cat((-q[..., 8:], q[..., :8]), dim=-1)
    out += [inv, q * c + rot * s]
    # RMSNorm, SiLU-and-mul
    x = g.tensor((4, 64))
    h = x.float()
    h = h * T.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    w = g.tensor((64,))
    out.append(w * h.to(x.dtype))
    gu = g.tensor((4, 32))
    out.append(F.silu(gu[..., :16]) * gu[..., 16:])
    # paged attention over gathered slots, bottom-right causal mask, GQA
    kc, vc = g.tensor((20, 2, 8)), g.tensor((20, 2, 8))
    slots = T.tensor([[4, 5, 6, 7, 9]], dtype=T.int32)[0, :5].long()
    qq = g.tensor((3, 4, 8))
    kk, vv = kc[slots], vc[slots]
    n, hq, d = qq.shape
    L, hkv = kk.shape[0], kk.shape[1]
    qh = qq.reshape(n, hkv, hq // hkv, d).permute(1, 2, 0, 3)
    scores = T.matmul(qh, kk.permute(1, 2, 0).unsqueeze(1)).float() * (d**-0.5)
    allowed = T.arange(L)[None, :] <= T.arange(L - n, L)[:, None]
    probs = T.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).to(vv.dtype)
    out.append(T.matmul(probs, vv.permute(1, 0, 2).unsqueeze(1)).permute(2, 0, 1, 3).reshape(n, hq, d))
    # page table allocation with two broadcast index tensors, token pool writes, page ids of slots
    table = T.zeros(4, 12, dtype=T.int32)
    offsets = T.arange(4, dtype=T.int32)
    rows = T.tensor([1, 1, 3], dtype=T.int64)[:, None]
    cols = T.tensor([0, 4, 8], dtype=T.int64)[:, None] + offsets[None, :]
    table[rows, cols] = T.tensor([2, 5, 1], dtype=T.int32)[:, None] * 4 + offsets[None, :]
    out += [table, table[1, :8:4] // 4, (table[1, ::4] // 4).tolist(), table[T.tensor([1, 3]), :6]]
    pool = T.zeros(3, 6, dtype=T.int32)
    pool[T.tensor([0, 2]), T.tensor([5, 1])] = T.tensor([41, 42], dtype=T.int32)
    out.append(pool)
    # sampling: temperature, top-k, top-p (all but the random draw)
    logits = g.distinct((2, 30))
    greedy = logits.argmax(dim=-1).to(T.int32)
    pr = T.softmax(logits[0].float() / 0.8, dim=-1)
    top = T.topk(pr, 10)
    pr = T.zeros_like(pr).scatter_(-1, top.indices, top.values)
    sp, order = T.sort(pr, descending=True)
    before = T.cumsum(sp, dim=-1) - sp
    keep = before < 0.9 * sp.sum()
    sp = sp * keep
    pr = T.zeros_like(pr).scatter_(-1, order, sp)
    out += [greedy, pr / pr.sum(), keep]
    cu = T.tensor([0, 3, 4, 9], dtype=T.int32)
    out.append((cu[1:3] - 1).long())
    return out

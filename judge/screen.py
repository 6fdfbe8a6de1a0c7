"""The screen: what a submission may contain in trusted mode, checked on its source before it runs.

A solution to an exercise is engine code: functions and methods that compute with torch and the
engine's own objects. The screen refuses, with ``compile_error`` naming the line and why, what no
solution needs and an attack does:

- imports outside an allow-list (the engine, torch, and the standard modules a solution needs);
- module-level code other than definitions (imports, functions, classes, constants): nothing runs
  before the tests start, so nothing can patch the engine, the judge or the builtins from there;
- reaching interpreter internals: dunder attributes (``__class__``, ``__globals__``, ``__code__``,
  ``__subclasses__``, ...), frame and code attributes (``f_back``, ``gi_frame``, ``co_code``, ...),
  module internals (``torch._C``), and the builtins that open the back doors (``eval``, ``exec``,
  ``compile``, ``open``, ``__import__``, ``globals``, ``vars``, ``setattr``, ``getattr`` with a
  computed name, ...);
- files, processes, the network and the judge through other names: ``os``, ``sys``, ``subprocess``,
  ``socket``, ``gc``, ``inspect``, ``ctypes``, ``judge``, ... and torch's own ways out (``torch.load``,
  ``torch.save``, ``torch.from_file``, ``Tensor.numpy``, ``torch.utils``, ``torch.ops``, ...);
- assigning to attributes of modules and classes (``torch.equal = ...``, ``GraphRunner.replay = ...``)
  and defining metaclasses or subclasses of engine or torch types.

The screen is one wall of several (see docs/judge.md): the learner's process also holds no reference,
and a referee outside it decides the verdict. Pure standard library.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from . import pyast

ALLOWED_MODULES = (
    "__future__", "torch", "torch.nn", "torch.nn.functional", "math", "typing", "dataclasses", "collections",
    "collections.abc", "itertools", "functools", "heapq", "bisect", "operator", "enum", "abc", "contextlib",
)
ALLOWED_PACKAGES = ("minisgl",)  # and their submodules
DENIED_PACKAGES = ("minisgl.testing",)  # builds models with transformers; nothing a solution needs
# Triton, for an exercise whose ``trusted_imports`` name it (chapter 19's kernels): a kernel is @triton.jit code over
# triton.language; the rest of triton (its compiler, runtime, knobs, backends, tools: where it builds, loads and
# configures native code) is out of reach. Kernels' pointers reach the process's memory, as any native kernel's
# do: the walls around the learner's process, not the screen, hold that (docs/judge.md)
TRITON_MODULES = frozenset({"triton", "triton.language", "triton.language.math"})
TRITON_ATTRIBUTES = frozenset({"jit", "cdiv", "next_power_of_2", "language"})  # of the module triton
TRITON_LANGUAGE_DENIED = frozenset({  # of triton.language: its internals, its other submodules, inline assembly
    "core", "semantic", "standard", "extra", "random", "target_info", "inline_asm_elementwise", "str_to_ty",
})

# builtins that open the back doors (refused wherever the name is read)
DENIED_BUILTINS = frozenset({
    "eval", "exec", "compile", "open", "__import__", "globals", "locals", "breakpoint", "input",
    "help", "exit", "quit", "delattr", "memoryview", "copyright", "credits", "license",
})
# modules that reach files, processes, the network, the interpreter or the judge: refused as imports and
# as attributes (``torch.os``); as plain names they do not exist in a screened submission's namespace
DENIED_NAMES = DENIED_BUILTINS | frozenset({
    "os", "sys", "subprocess", "socket", "builtins", "importlib", "ctypes", "gc", "inspect", "threading",
    "multiprocessing", "signal", "shutil", "pathlib", "io", "pickle", "marshal", "types", "code", "codeop",
    "runpy", "resource", "posix", "weakref", "linecache", "traceback", "tempfile", "glob", "select",
    "selectors", "asyncio", "concurrent", "urllib", "http", "ssl", "platform", "sysconfig", "site", "pty",
    "fcntl", "mmap", "judge", "numpy", "np", "faulthandler", "atexit", "tracemalloc", "warnings",
})
# attribute names that open files, reach C internals or leave the tensor world
DENIED_ATTRIBUTES = DENIED_NAMES | frozenset({
    "load", "save", "from_file", "fromfile", "tofile", "loadtxt", "savetxt", "memmap", "hub", "utils", "ops",
    "classes", "library", "jit", "package", "compile", "distributed", "backends", "cpp_extension",
    "UntypedStorage", "TypedStorage", "untyped_storage", "storage", "from_numpy", "frombuffer",
    "format", "format_map", "modules", "f_back", "f_builtins", "f_code", "f_globals", "f_locals",
    "f_trace", "f_lineno", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code",
    "tb_frame", "tb_next", "co_code", "co_consts", "co_names", "co_varnames", "co_filename",
    "register_forward_hook", "register_hook", "set_", "_C", "overrides", "fx", "export", "autograd",
    "profiler", "testing", "serialization", "set_default_device", "set_default_dtype", "set_rng_state",
})
ALLOWED_DUNDER_ATTRIBUTES = frozenset({"__init__", "__name__", "__doc__"})
DENIED_METHOD_NAMES = frozenset({
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__del__", "__init_subclass__",
    "__class_getitem__", "__set_name__", "__reduce__", "__reduce_ex__", "__new__", "__instancecheck__",
    "__subclasscheck__", "__torch_function__", "__torch_dispatch__", "__array__", "__index__", "__int__",
    "__float__", "__bool__", "__eq__", "__ne__", "__hash__", "__len__", "__iter__", "__getitem__",
    "__format__", "__str__", "__repr__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__",
})
ALLOWED_DECORATORS = frozenset({
    "staticmethod", "classmethod", "property", "dataclass", "dataclasses.dataclass", "functools.cache",
    "functools.lru_cache", "cache", "lru_cache", "torch.inference_mode", "torch.no_grad",
})


def allowed_module(name: str, extra: tuple[str, ...] = ()) -> bool:
    """Whether a screened submission may import (and see) the module ``name``; ``extra``: the exercise's
    ``trusted_imports`` (a loader that reads files needs ``pathlib``)."""
    if any(name == d or name.startswith(d + ".") for d in DENIED_PACKAGES):
        return False
    if name == "triton" or name.startswith("triton."):
        return "triton" in extra and name in TRITON_MODULES
    return name in ALLOWED_MODULES or any(name == p or name.startswith(p + ".") for p in ALLOWED_PACKAGES + extra)


def triton_refusal(path: str) -> str | None:
    """Why the dotted ``path`` (``triton.jit``, ``triton.language.load``, ...) is out of a kernel's reach, or None."""
    parts = path.split(".")[1:]
    if not parts:
        return None
    if parts[0] not in TRITON_ATTRIBUTES:
        return (f"{path} is not allowed: a kernel needs only triton.jit, triton.cdiv, triton.next_power_of_2 and "
                "triton.language")
    if parts[0] == "language" and len(parts) > 1 and (parts[1] in TRITON_LANGUAGE_DENIED or parts[1].startswith("_")):
        return f"{path} is not allowed in trusted judging (Triton's internals, or inline assembly)"
    return None


@dataclass
class Refusal:
    line: int
    why: str


class _Screen(ast.NodeVisitor):
    def __init__(self, targets_owners: set[str], extra: tuple[str, ...] = ()):
        self.owners, self.extra = targets_owners, extra
        self.problems: list[Refusal] = []
        self.module_aliases: set[str] = {"torch", "F", "math"}
        # the names imports bind to parts of triton ("tl": "triton.language"): those are checked by the Triton rules
        # (``tl.load`` is Triton's load, not torch's), so each is bound once, by its import, and never rebound
        self.triton_names: dict[str, str] = {}
        self.depth = 0  # 0: module level

    def refuse(self, node: ast.AST, why: str) -> None:
        self.problems.append(Refusal(getattr(node, "lineno", 0), why))

    # -- module level: definitions only
    def visit_Module(self, node: ast.Module) -> None:
        for i, stmt in enumerate(node.body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # the docstring
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Pass)):
                self.visit(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _constant_assignment(stmt):
                self.visit(stmt)
            elif isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
                continue  # `if TYPE_CHECKING:` imports never run
            else:
                self.refuse(stmt, "only imports, functions, classes and constants may be at the top level of "
                                  "your file (no code runs before the tests do)")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            self.module_aliases.add((alias.asname or alias.name).split(".")[0])


    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.refuse(node, "relative imports are not allowed")
            return
        self._check_module(node, node.module or "")
        for alias in node.names:
            why = triton_refusal(f"{node.module}.{alias.name}") if _is_triton(node.module or "") else None
            if why:
                self.refuse(node, why)
            elif alias.name == "*":
                self.refuse(node, "`from ... import *` is not allowed: import the names you use")
            elif alias.name in DENIED_NAMES or alias.name.startswith("_") and not self._engine(node.module or ""):
                self.refuse(node, f"importing {alias.name!r} is not allowed")
            elif self._allowed(f"{node.module}.{alias.name}") and (node.module or "") != "__future__":
                self.module_aliases.add(alias.asname or alias.name)

    def _allowed(self, name: str) -> bool:
        return allowed_module(name, self.extra)

    @staticmethod
    def _engine(name: str) -> bool:
        return any(name == p or name.startswith(p + ".") for p in ALLOWED_PACKAGES)

    def _check_module(self, node: ast.AST, name: str) -> None:
        if not self._allowed(name):
            allowed = ", ".join(m for m in ALLOWED_MODULES if m != "__future__")
            self.refuse(node, f"importing {name!r} is not allowed in trusted judging (allowed: the engine "
                              f"`minisgl`, {allowed})")

    # -- definitions
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._refuse_rebinding(node, node.name)
        for d in node.decorator_list:
            name = _dotted(d.func if isinstance(d, ast.Call) else d)
            if self._triton_path(name) == "triton.jit" and "triton" in self.extra:
                pass  # a Triton kernel
            elif name not in ALLOWED_DECORATORS and name.rpartition(".")[2] not in ("setter", "getter", "deleter"):
                self.refuse(d, f"the decorator @{name or ast.unparse(d)} is not allowed "
                               f"(allowed: {', '.join(sorted(ALLOWED_DECORATORS))})")
            if isinstance(d, ast.Call):
                self._visit_list(d.args)
                self._visit_list([k.value for k in d.keywords])
        if node.name in DENIED_METHOD_NAMES:
            self.refuse(node, f"defining {node.name} is not allowed in trusted judging")
        self._visit_arguments(node.args)
        if node.returns is not None:  # evaluated when the function is defined
            self.visit(node.returns)
        self.depth += 1
        self._visit_list(node.body)
        self.depth -= 1

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.refuse(node, "async functions are not allowed")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.keywords:
            self.refuse(node, "class keywords (metaclass=...) are not allowed")
        for base in node.bases:
            if not (isinstance(base, ast.Name) and base.id == "object"):
                self.refuse(base, "a class may not have a base class here: write the target's methods inside a "
                                  "plain stub `class Name:` (helper classes too)")
        for d in node.decorator_list:
            name = _dotted(d.func if isinstance(d, ast.Call) else d)
            if name not in ("dataclass", "dataclasses.dataclass"):
                self.refuse(d, f"the class decorator @{name or ast.unparse(d)} is not allowed")
        self._refuse_rebinding(node, node.name)
        self.depth += 1
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.Pass)):
                self.visit(stmt)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and _constant_assignment(stmt, in_class=True):
                self.visit(stmt)
            else:
                self.refuse(stmt, "a class body may hold only methods, annotations and constants")
        self.depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_arguments(node.args)
        self.visit(node.body)

    def _visit_arguments(self, args: ast.arguments) -> None:
        """Defaults and annotations (both evaluated where the function is defined), and the parameters' names."""
        self._visit_list(args.defaults)
        self._visit_list([d for d in args.kw_defaults if d is not None])
        for a in args.posonlyargs + args.args + args.kwonlyargs + [x for x in (args.vararg, args.kwarg) if x]:
            self._refuse_rebinding(a, a.arg)
            if a.annotation is not None:
                self.visit(a.annotation)

    def _refuse_rebinding(self, node: ast.AST, name: str | None) -> None:
        if name in self.triton_names:
            self.refuse(node, f"{name!r} names {self.triton_names[name]} (imported): give this another name")

    def _triton_path(self, dotted: str) -> str | None:
        """``dotted`` with its first name replaced by the part of triton an import bound it to; None where its first
        name is not bound so (a local named ``triton`` is not the module)."""
        head, _, rest = dotted.partition(".")
        origin = self.triton_names.get(head)
        return None if origin is None else origin + ("." + rest if rest else "")

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._refuse_rebinding(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._refuse_rebinding(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._refuse_rebinding(node, node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._refuse_rebinding(node, node.rest)
        self.generic_visit(node)

    # -- what code may reach
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._refuse_rebinding(node, node.id)
        if node.id in DENIED_BUILTINS:
            self.refuse(node, f"{node.id!r} is not available in trusted judging")
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ("__name__", "__doc__"):
            self.refuse(node, f"{node.id!r} is not available in trusted judging")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        path = self._triton_path(_dotted(node))
        if attr.startswith("__") and attr.endswith("__"):
            if attr not in ALLOWED_DUNDER_ATTRIBUTES:
                self.refuse(node, f"the attribute {attr!r} reaches the interpreter's internals: not allowed")
        elif path is not None and _triton_governed(path):
            why = triton_refusal(path)  # instead of the names refused elsewhere: tl.load is Triton's load
            if why:
                self.refuse(node, why)
        elif attr in DENIED_ATTRIBUTES:
            self.refuse(node, f"the attribute {attr!r} is not allowed in trusted judging")
        elif attr.startswith("_") and isinstance(node.value, ast.Name) and node.value.id in self.module_aliases:
            self.refuse(node, f"{node.value.id}.{attr}: a module's private names are not allowed")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and not _is_instance_attribute(node):
            self.refuse(node, f"assigning to {ast.unparse(node)} is not allowed: change objects you were given "
                              "(self, batch, ...), never modules or classes")
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        if name in ("getattr", "hasattr", "setattr") and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            attr = node.args[1].value  # a computed name is checked when it runs (restricted_builtins)
            private_of_module = isinstance(attr, str) and attr.startswith("_") and isinstance(
                node.args[0], ast.Name) and node.args[0].id in self.module_aliases
            if not isinstance(attr, str) or attr.startswith("__") or attr in DENIED_ATTRIBUTES or private_of_module:
                self.refuse(node, f"{name}(..., {attr!r}) is not allowed")
        elif name == "type" and len(node.args) != 1:
            self.refuse(node, "type() with three arguments creates a class: not allowed")
        elif name == "super" and node.args:
            self.refuse(node, "use super() without arguments")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.refuse(node, "`global` is not allowed: keep state on the objects you were given")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.generic_visit(node)

    def visit_Await(self, node: ast.Await) -> None:
        self.refuse(node, "await is not allowed")

    def _visit_list(self, nodes: list) -> None:
        for n in nodes:
            self.visit(n)


def _is_triton(path: str) -> bool:
    return path == "triton" or path.startswith("triton.")


def _triton_governed(path: str) -> bool:
    """Whether the Triton rules decide the last attribute of ``path``: triton.X, triton.language.X,
    triton.language.math.X (what lies beyond, such as an attribute of a dtype, follows the general rules)."""
    parts = path.split(".")
    return len(parts) == 2 or len(parts) == 3 and parts[1] == "language" or \
        len(parts) == 4 and parts[1:3] == ["language", "math"]


def _import_bindings(tree: ast.AST) -> list[tuple[ast.AST, str, str]]:
    """(import node, the name it binds, what it binds it to) for every import in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.append((node, a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.extend((node, a.asname or a.name, f"{node.module}.{a.name}") for a in node.names if a.name != "*")
    return out


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _is_type_checking(test: ast.expr) -> bool:
    return _dotted(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _constant_assignment(stmt: ast.Assign | ast.AnnAssign, in_class: bool = False) -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if not all(isinstance(t, ast.Name) for t in targets):
        return False
    if stmt.value is None:
        return isinstance(stmt, ast.AnnAssign)
    try:
        ast.literal_eval(stmt.value)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    # a constant built from torch/engine names, such as `EPS = 1e-6` or `DTYPE = torch.int32`
    return isinstance(stmt.value, ast.Attribute) and bool(_dotted(stmt.value))


def _is_instance_attribute(node: ast.Attribute) -> bool:
    """``self.x = ...``, ``batch.input_ids = ...``, ``obj.a.b = ...``: an attribute of a plain local name.

    Lowercase names are objects passed in or made locally; capitalised names are classes, and module
    aliases are modules."""
    base = node.value
    while isinstance(base, (ast.Attribute, ast.Subscript)):
        base = base.value
    return isinstance(base, ast.Name) and base.id[:1].islower() and base.id not in ("torch", "math", "F")


def screen(source: str, filename: str, target_owners: set[str], extra: tuple[str, ...] = ()) -> list[Refusal]:
    """What the screen refuses in ``source`` (empty: it may run). ``source`` must parse."""
    tree = pyast.parse(source, filename)
    s = _Screen(target_owners, extra)
    bindings = _import_bindings(tree)
    origins: dict[str, set[str]] = {}
    for _, name, origin in bindings:
        origins.setdefault(name, set()).add(origin)
    for node, name, origin in bindings:
        if any(_is_triton(o) for o in origins[name]):
            if len(origins[name]) > 1:
                s.refuse(node, f"{name!r} is imported as {' and as '.join(sorted(origins[name]))}: one name, "
                               "one import")
            s.triton_names[name] = origin
    s.visit(tree)
    return sorted(s.problems, key=lambda r: r.line)


# the builtins a screened submission runs with: no way back to the ones screened out by name
SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod",
    "complex", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "getattr", "hasattr", "hash",
    "hex", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
    "object", "oct", "ord", "pow", "print", "property", "range", "repr", "reversed", "round", "set", "setattr",
    "slice",
    "sorted", "staticmethod", "str", "sum", "super", "tuple", "type", "zip", "aiter", "anext",
    "ArithmeticError", "AssertionError", "AttributeError", "BaseException", "Exception", "IndexError",
    "KeyError", "LookupError", "NameError", "NotImplemented", "NotImplementedError", "OverflowError",
    "RuntimeError", "StopIteration", "TypeError", "ValueError", "ZeroDivisionError", "Ellipsis", "None",
    "True", "False", "__build_class__", "__name__",
)


def _attribute_name(obj, name) -> str:
    import types

    if not isinstance(name, str):
        raise TypeError("attribute name must be a string")
    name = str.__str__(name)  # the exact string, whatever a subclass says
    if name.startswith("__") or name in DENIED_ATTRIBUTES or name.startswith("_") and isinstance(obj, types.ModuleType):
        raise AttributeError(f"the attribute {name!r} is not available in trusted judging")
    if isinstance(obj, types.ModuleType) and _is_triton(obj.__name__) and triton_refusal(f"{obj.__name__}.{name}"):
        raise AttributeError(triton_refusal(f"{obj.__name__}.{name}"))
    return name


def restricted_builtins(importer, extra: tuple[str, ...] = ()) -> dict:
    """The builtins of a screened submission: SAFE_BUILTINS, and ``getattr``/``hasattr``/``setattr``/``vars``
    that refuse what the screen refuses by name (and setting attributes of modules and classes)."""
    import builtins
    import types

    table = {k: getattr(builtins, k) for k in SAFE_BUILTINS if hasattr(builtins, k)}
    real_getattr, real_setattr = builtins.getattr, builtins.setattr

    def guarded_getattr(obj, name, *default):
        return real_getattr(obj, _attribute_name(obj, name), *default)

    def guarded_hasattr(obj, name):
        try:
            real_getattr(obj, _attribute_name(obj, name))
            return True
        except AttributeError:
            return False

    def guarded_setattr(obj, name, value):
        if isinstance(obj, (type, types.ModuleType)):
            raise AttributeError(f"setting attributes of {type(obj).__name__}s is not allowed in trusted judging")
        real_setattr(obj, _attribute_name(obj, name), value)

    def guarded_vars(obj):
        if isinstance(obj, (type, types.ModuleType)):
            raise TypeError(f"vars() of {type(obj).__name__}s is not allowed in trusted judging")
        return obj.__dict__

    table.update(getattr=guarded_getattr, hasattr=guarded_hasattr, setattr=guarded_setattr, vars=guarded_vars)

    # imports are screened statically; at run time torch's own C code imports through the builtins of
    # the frame that calls it (the submission's), so __import__ must be the real one
    table["__import__"] = importer
    return table

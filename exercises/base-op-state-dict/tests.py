"""Tests for base-op-state-dict: names, order and identity of state_dict; the checks and the in-place copy of
load_state_dict; the tiny model's weights loaded through them."""

import torch

from judge.testing import PROMPT_IDS, engine, expected, generate, rng
from minisgl.layers import BaseOP, Linear, OPList, RMSNorm
from minisgl.models import ModelConfig
from minisgl.models.llama import LlamaForCausalLM
from minisgl.models.qwen3 import Qwen3ForCausalLM
from minisgl.testing import tiny_model

CPU = torch.device("cpu")
WORDS = ["proj", "norm", "gate", "head", "embed", "scale", "mix", "out"]


class Node(BaseOP):
    """An op whose attributes the test sets."""


def values(g, rows: int, cols: int) -> torch.Tensor:
    """A [rows, cols] float32 tensor of random values in [0.1, 2] (never the zeros of a fresh buffer)."""
    return torch.tensor([[round(g.uniform(0.1, 2.0), 3) for _ in range(cols)] for _ in range(rows)],
                        dtype=torch.float32)


def random_tree(g, depth: int = 0) -> Node:
    """An op with random attributes: tensors, child ops, lists of ops, private tensors, None and numbers."""
    op = Node()
    kinds = ["tensor", "tensor", "op", "list", "private", "none", "number"] if depth < 2 else \
        ["tensor", "private", "none", "number"]
    for i in range(g.randint(2, 5)):
        kind, name = g.choice(kinds), f"{g.choice(WORDS)}_{i}"
        if kind == "tensor":
            setattr(op, name, values(g, g.randint(2, 4), g.randint(5, 7)))
        elif kind == "op":
            setattr(op, name, random_tree(g, depth + 1))
        elif kind == "list":
            setattr(op, name, OPList([random_tree(g, depth + 1) for _ in range(g.randint(1, 3))]))
        elif kind == "private":
            setattr(op, "_" + name, values(g, 3, 4))
        elif kind == "none":
            setattr(op, name, None)
        else:
            setattr(op, name, g.randint(1, 9))
    setattr(op, f"weight_{depth}", values(g, depth + 2, 3))
    return op


def names(op: BaseOP, prefix: str = "") -> list[str]:
    return list(op.state_dict(prefix))


def resolve(op, dotted: str):
    """The object a dotted name points at, found by walking the attributes (the test's own walk)."""
    for part in dotted.split("."):
        op = op[int(part)] if isinstance(op, OPList) else getattr(op, part)
    return op


def walk(op, prefix: str = "") -> dict:
    """The test's own walk over an op's tensors (public attributes in order, OPList by index): inputs and
    checks built without calling the code under test."""
    out = {}
    items = [(str(i), o) for i, o in enumerate(op)] if isinstance(op, OPList) else list(vars(op).items())
    for name, value in items:
        if name.startswith("_"):
            continue
        if isinstance(value, torch.Tensor):
            out[prefix + name] = value
        elif isinstance(value, BaseOP):
            out.update(walk(value, f"{prefix}{name}."))
    return out


def snapshot(op: BaseOP, prefix: str = "") -> dict:
    return {k: v.tolist() for k, v in walk(op, prefix).items()}


def model(arch: str = "qwen3", **kw):
    path = tiny_model(arch, **kw)
    cls = Qwen3ForCausalLM if arch == "qwen3" else LlamaForCausalLM
    return cls(ModelConfig.from_path(path), torch.float32, CPU)


def test_example_linear_and_a_nested_op():
    """A Linear without bias has only 'weight'; an op holding a Linear and an RMSNorm gives dotted names."""
    lin = Linear(5, 3, False, torch.float32, CPU)
    got = names(lin)
    assert got == ["weight"], "a Linear without bias holds only its weight (bias=None is skipped)"
    op = Node()
    op.proj = lin
    op.norm = RMSNorm(5, 1e-6, torch.float32, CPU)
    got = names(op, "block.")
    assert got == ["block.proj.weight", "block.norm.weight"], "child ops' names are prefixed with 'prefix + name.'"
    same = op.state_dict()["proj.weight"] is lin.weight
    assert same, "the values are the op's own tensors, not copies"


def test_example_load_a_linear():
    """load_state_dict copies the values into the op's own weight tensor."""
    lin = Linear(4, 3, False, torch.float32, CPU)
    weight = lin.weight
    new = torch.tensor([[0.5, 1.5, 2.5, 3.5], [4.5, 5.5, 6.5, 7.5], [8.5, 9.5, 1.25, 2.25]])
    lin.load_state_dict({"weight": new})
    assert lin.weight is weight, "load_state_dict must copy into the existing tensor, not replace it"
    assert torch.equal(lin.weight, new), "the weight must hold the loaded values"


def test_random_trees_names_and_order():
    """Random trees of ops: the names and their order equal the engine's (private and non-tensor skipped)."""
    g = rng()
    for _ in range(5):
        tree = random_tree(g)
        prefix = g.choice(["", "model.", f"layers.{g.randint(1, 9)}."])
        got = names(tree, prefix)
        assert got == expected(names, tree, prefix), \
            "the names (or their order) differ from the engine's: tensors under prefix + name, child ops depth first"
        assert not any(part.startswith("_") for n in got for part in n.split(".")), "private attributes are not state"


def test_names_in_the_order_of_the_attributes():
    """The names follow _children's order, depth first: a child op's names come where the child was set, between
    the tensors set before and after it (fixed, then random trees against the test's own walk)."""
    g = rng()
    op = Node()
    op.first = values(g, 2, 3)
    op.child = Node()
    op.child.inner = values(g, 2, 2)
    op.last = values(g, 3, 2)
    got = names(op, "p.")
    assert got == ["p.first", "p.child.inner", "p.last"], \
        "in the order the attributes were set: a child op's names between the tensors around it"
    for _ in range(5):
        tree = random_tree(g)
        prefix = g.choice(["", "model.", f"layers.{g.randint(1, 9)}."])
        got = names(tree, prefix)
        assert got == list(walk(tree, prefix)), \
            "tensors under prefix + name, child ops depth first, in the order of _children (None and numbers skipped)"


def test_a_tensor_held_under_several_names():
    """One tensor object held by several public attributes (two of the op's, one of a child op's): it goes in
    under every name, once per (name, value) of _children (as PyTorch's state_dict keeps tied weights)."""
    g = rng()
    shared = values(g, g.randint(2, 4), g.randint(5, 7))
    op = Node()
    op.first = shared
    op.child = Node()
    op.child.inner = shared
    op.own = values(g, 2, 3)
    op.again = shared
    got = names(op, "m.")
    assert got == ["m.first", "m.child.inner", "m.own", "m.again"], \
        "a tensor held under several names goes in under each of them: never drop a tensor already seen"
    state = op.state_dict()
    same = [state[k] is shared for k in ("first", "child.inner", "again")]
    assert same == [True, True, True], "each name's value is the op's own (shared) tensor"


def test_lists_of_ops_are_numbered():
    """An OPList's ops are named by their index: 'layers.0.weight', 'layers.1.weight', ..."""
    g = rng()
    n = g.randint(3, 6)
    op = Node()
    op.layers = OPList([Linear(g.randint(2, 5), g.randint(6, 8), True, torch.float32, CPU) for _ in range(n)])
    got = names(op)
    want = [f"layers.{i}.{w}" for i in range(n) for w in ("weight", "bias")]
    assert got == want, "an OPList's children are its ops, named '0', '1', ... (OPList._children)"


def test_values_are_the_ops_own_tensors():
    """Every value of state_dict is the very tensor the op holds (writing into it writes the weight)."""
    g = rng()
    tree = random_tree(g)
    prefix = "root."
    state = tree.state_dict(prefix)
    same = all(state[k] is resolve(tree, k[len(prefix):]) for k in state)
    assert same, "state_dict must return the op's own tensors, not copies"


def test_the_tiny_models_names():
    """The tiny Qwen3 and a tied Llama: the engine's names; a tied LM head has no weight of its own."""
    qwen = model("qwen3")
    got = names(qwen)
    assert got == expected(names, qwen), "the tiny Qwen3's weight names differ from the engine's"
    llama = model("llama", gqa=False, tied=True)
    got = names(llama)
    assert "lm_head.weight" not in got, "a tied LM head shares the embedding's weight: it holds no weight itself"
    assert got == expected(names, llama), "the tied Llama's weight names differ from the engine's"


def test_missing_weights_raise_before_copying():
    """A state dict missing some weights: KeyError naming them, and nothing is copied."""
    g = rng()
    tree = random_tree(g)
    tree.extra_weight = values(g, 2, 5)  # at least two weights, this one last
    before = snapshot(tree)
    state = {k: v.clone() + 1.0 for k, v in walk(tree).items()}
    # the first weight in order is never missing and the last always is: copying as you go copies something
    order = list(state)
    missing = sorted(set(g.sample(order[1:], min(len(order) - 1, g.randint(1, 3)))) | {order[-1]})
    for k in missing:
        del state[k]
    try:
        tree.load_state_dict(state)
        message = None
    except KeyError as e:
        message = str(e)
    assert message is not None, f"weights {missing} are missing: load_state_dict must raise KeyError"
    named = [k for k in missing[:5] if k in message]
    assert named == missing[:5], f"the KeyError must name the missing weights {missing[:5]}; it was: {message}"
    after = snapshot(tree)
    assert after == before, "nothing may be copied when a weight is missing (check first, then copy)"


def test_many_missing_weights_are_named():
    """Twelve weights missing: the message names at least the first five in sorted order (layers.10 and
    layers.11 sort before layers.2, so the walk's order is not the sorted one)."""
    op = Node()
    op.layers = OPList([RMSNorm(3 + i, 1e-6, torch.float32, CPU) for i in range(12)])
    try:
        op.load_state_dict({})
        message = None
    except KeyError as e:
        message = str(e)
    assert message is not None, "an empty state dict misses every weight: KeyError"
    first = sorted(f"layers.{i}.weight" for i in range(12))[:5]
    named = [k for k in first if k in message]
    assert named == first, f"the KeyError must name the first five missing weights in sorted order: {first}"


def test_shape_mismatch_is_refused():
    """A tensor of the wrong shape, even one that would broadcast ([1, n] into [m, n]): ValueError naming the
    weight and both shapes."""
    g = rng()
    rows, cols = g.randint(3, 6), g.randint(7, 9)
    op = Node()
    op.proj = Linear(cols, rows, False, torch.float32, CPU)
    op.norm = RMSNorm(cols, 1e-6, torch.float32, CPU)
    bad = values(g, 1, cols)
    try:
        op.load_state_dict({"proj.weight": bad, "norm.weight": values(g, 1, cols)[0]})
        message = None
    except ValueError as e:
        message = str(e)
    assert message is not None, f"shape (1, {cols}) into a ({rows}, {cols}) weight must raise ValueError"
    assert "proj.weight" in message, f"the message must name the weight; it was: {message}"
    shapes = f"{rows}, {cols}" in message and f"1, {cols}" in message
    assert shapes, f"the message must show both shapes ({rows}, {cols}) and (1, {cols}); it was: {message}"


def refused_shape(op: BaseOP, state: dict) -> tuple[str | None, str]:
    """(the kind of error load_state_dict raised, its message): (None, "") if it raised none."""
    try:
        op.load_state_dict(state)
    except ValueError as e:
        return "ValueError", str(e)
    except NotImplementedError:
        raise
    except RuntimeError as e:  # copy_ itself refusing the shape: the check was not made
        return "RuntimeError", str(e)
    return None, ""


def test_same_size_other_shape_is_refused():
    """Shapes are compared, not sizes: a transposed, a flattened or an unsqueezed tensor with as many elements
    as the weight is refused with ValueError naming the weight and both shapes."""
    g = rng()
    rows, cols = g.randint(3, 6), g.randint(7, 9)
    op = Node()
    op.proj = Linear(cols, rows, False, torch.float32, CPU)
    good = values(g, rows, cols)
    for bad in (good.t().contiguous(), good.reshape(rows * cols), good.reshape(rows, cols, 1)):
        shape = tuple(bad.shape)
        kind, message = refused_shape(op, {"proj.weight": bad})
        assert kind == "ValueError", (f"shape {shape} into a ({rows}, {cols}) weight (as many elements, another "
                                      f"shape) must raise ValueError before copying; it raised {kind}: {message}")
        assert "proj.weight" in message, f"the message must name the weight; it was: {message}"
        shown = str(shape)[1:-1].rstrip(",") in message and f"{rows}, {cols}" in message
        assert shown, f"the message must show both shapes {shape} and ({rows}, {cols}); it was: {message}"
    kind, message = refused_shape(op, {"proj.weight": good})
    assert kind is None, f"the weight's own shape ({rows}, {cols}) must load; it raised {kind}: {message}"


def test_plain_lists_are_not_state():
    """Python lists, tuples and dicts of ops or tensors are skipped (only an OPList is an op): their tensors get
    no names, and loading needs none of them."""
    g = rng()
    op = Node()
    op.proj = Linear(g.randint(2, 4), g.randint(5, 7), False, torch.float32, CPU)
    op.shared = [Linear(3, 2, False, torch.float32, CPU), RMSNorm(4, 1e-6, torch.float32, CPU)]
    op.pair = (values(g, 2, 3), values(g, 3, 2))
    op.cache = [values(g, 2, 2)]
    op.table = {"k": values(g, 2, 5)}
    op.norm = RMSNorm(g.randint(5, 8), 1e-6, torch.float32, CPU)
    got = names(op, "m.")
    assert got == ["m.proj.weight", "m.norm.weight"], \
        "only tensors and ops are state: plain lists, tuples and dicts (of ops or tensors) are skipped"
    tree = random_tree(g)
    tree.more = [random_tree(g, 2), values(g, 2, 2)]
    got = names(tree)
    assert got == list(walk(tree)), "a plain Python list attribute is skipped, whatever it holds"
    state = {k: v.clone() for k, v in walk(tree).items()}
    try:
        tree.load_state_dict(state)
        error = None
    except (KeyError, ValueError) as e:
        error = f"{type(e).__name__}: {e}"
    assert error is None, f"a state dict without the list's tensors must load: they are not state; it raised {error}"


def test_extra_keys_and_a_prefix():
    """A whole model's state dict loaded into one decoder layer with its prefix: extra keys ignored, the layer's
    weights copied."""
    g = rng()
    qwen = model("qwen3")
    i = g.randrange(2)
    prefix = f"model.layers.{i}."
    layer = qwen.model.layers[i]
    full = {k: values(g, *v.shape) if v.dim() == 2 else values(g, 1, v.shape[0])[0] for k, v in walk(qwen).items()}
    try:
        layer.load_state_dict(full, prefix)
        error = None
    except (KeyError, ValueError) as e:
        error = f"{type(e).__name__}: {e}"
    assert error is None, (f"a whole checkpoint loaded into one layer with prefix {prefix!r} must work (its "
                           f"names are prefix + name; other keys are ignored); it raised {error}")
    got = snapshot(layer, prefix)
    want = {k: full[k].tolist() for k in walk(layer, prefix)}
    assert got == want, "the layer's weights must hold the values of the prefixed names of the state dict"


def test_copies_in_place_and_keeps_the_dtype():
    """float64 tensors loaded into float32 weights: the same tensor objects, still float32, the values converted."""
    g = rng()
    tree = random_tree(g)
    objects = walk(tree)
    state = {k: (values(g, *v.shape) + 0.25).to(torch.float64) for k, v in objects.items()}
    tree.load_state_dict(state)
    after = walk(tree)
    same = all(after[k] is objects[k] for k in objects)
    assert same, "load_state_dict must copy into the op's tensors, never put new tensors in their place"
    dtypes = sorted({str(v.dtype) for v in after.values()})
    assert dtypes == ["torch.float32"], "the weights keep their dtype (float32): the values are converted"
    close = all(torch.allclose(after[k], state[k].to(torch.float32)) for k in state)
    assert close, "the weights must hold the loaded values"


def test_copy_writes_into_the_weights_memory():
    """float32 tensors into float32 weights: the values are written into the weights' own memory (a view of a
    weight taken before the load sees them), and the weights share no memory with the state dict given (changing
    its tensors afterwards leaves the weights alone): a copy, not a new storage behind the same object."""
    g = rng()
    tree = random_tree(g)
    objects = walk(tree)
    views = {k: v.view(-1) for k, v in objects.items()}
    state = {k: values(g, *v.shape) + 0.5 for k, v in objects.items()}
    wanted = {k: v.tolist() for k, v in state.items()}
    tree.load_state_dict(state)
    seen = {k: views[k].view(objects[k].shape).tolist() for k in objects}
    assert seen == wanted, ("the values must be copied into the weights' own memory (copy_): a view taken before "
                            "the load (as a CUDA graph or a tied head holds) must see them")
    for v in state.values():
        v.add_(1.0)
    after = snapshot(tree)
    assert after == wanted, "the weights must not share memory with the state dict: changing it changed the weights"


def run_changed_weights(chosen: int, factor: float) -> list[list[int]]:
    """The tiny model with some weights scaled by `factor` through load_state_dict: its greedy tokens."""
    with engine() as llm:
        m = llm.engine.model
        state = m.state_dict()
        keys = sorted(state)[chosen::5]
        m.load_state_dict({k: v * factor if k in keys else v.clone() for k, v in state.items()})
        return generate(llm, PROMPT_IDS[:3], 5)


def test_engine_loads_and_reloads_weights():
    """The engine loads the tiny checkpoint through your state_dict; then some weights are scaled through your
    load_state_dict: the tokens equal the engine's own code doing the same."""
    g = rng()
    chosen, factor = g.randrange(5), round(g.uniform(1.3, 2.2), 2)
    got = run_changed_weights(chosen, factor)
    assert got == expected(run_changed_weights, chosen, factor), "the tokens differ from the engine's"

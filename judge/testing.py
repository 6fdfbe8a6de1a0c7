"""What an exercise's ``tests.py`` imports from the judge.

    from judge.testing import gpu, original, reference_code, metric, mode

- ``@gpu`` marks a test that only a real CUDA device can judge (skipped, with the reason, elsewhere);
- ``expected(fn, *args)`` is an expected value: ``fn(*args)`` with the engine's own code bound, where ``fn``
  is a target spec (``"pkg.mod:Class.method"``, called with ``self`` first for a method) or any
  callable; compare it only in an ``assert`` (in trusted mode the learner's process never sees it);
- ``rng()`` is a ``random.Random`` for hidden inputs, drawn per judging (the same in every process of
  one judging, different in each test); ``seed()`` is its integer seed; ``hidden_prompts()`` draws
  token-id prompts from it;
- ``metric(name, value)`` records a number into the verdict's ``metrics``;
- ``mode()`` is the judging mode: ``browser``, ``local`` or ``gpu``;
- engine helpers for the exercises: ``engine()``, ``tiny_llm()``, ``generate()``, ``eager_tokens()``,
  ``Trace`` and ``PROMPT_IDS`` (the tiny random Qwen3 of ``minisgl.testing``).

Nothing here imports torch at import time.
"""

from __future__ import annotations

import contextlib
import random
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .binding import Binding, Original
    from .checks import Checks
    from .submission import Submission

GPU_ATTR = "__judge_needs_gpu__"
# end-to-end token tests: where tokens first differ from transformers', its two best logits closer than this are a
# near-tie that float rounding may break either way (minisgl.testing.greedy_differences)
TIE = 1e-4


class _RunState:
    """The judging that runs in this process, as the harness set it up: what the helpers below read."""

    def __init__(self) -> None:
        self.mode = "local"
        self.originals: dict[str, Original] = {}  # target spec -> the engine's own code
        self.binding: Binding | None = None  # set once the submission is bound
        self.submission: Submission | None = None
        self.metrics: dict[str, float] = {}
        self.seed = 0  # the judging's seed for hidden inputs
        self.test = ""  # the test that runs now
        # judge: this process decides; reference / learner: trusted mode, a referee decides from both
        self.role = "judge"
        self.checks: Checks | None = None  # the running judge.checks.Checks
        self.drawn: EngineDraw | None = None  # the engine configuration engine() drew for the running test

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


RUN: _RunState = _RunState()


def gpu(fn: Callable | None = None, *, reason: str = "") -> Any:
    """Mark a test that needs a real CUDA GPU; it is skipped where torch.cuda.is_available() is False."""

    def mark(f: Callable) -> Callable:
        setattr(f, GPU_ATTR, reason or "needs a CUDA GPU (a real capture)")
        return f

    return mark(fn) if fn is not None else mark


def needs_gpu(fn: Callable) -> str | None:
    return getattr(fn, GPU_ATTR, None)


def cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a torch without cuda (the browser)
        return False


def mode() -> str:
    return RUN.mode


class ReferenceUnavailable(RuntimeError):
    """The engine's own code for the targets is not in this process (the learner's, in trusted mode)."""


def _no_reference(what: str) -> None:
    if RUN.role == "learner":
        raise ReferenceUnavailable(f"{what}: the engine's own code for the targets is not available in trusted "
                                   "judging (an exercise bug: compute expected values with expected())")


def original(spec: str) -> Any:
    """The engine's own object for a target (a function; for methods the plain function)."""
    _no_reference(f"original({spec!r})")
    orig = RUN.originals.get(spec)
    if orig is None:
        raise KeyError(f"{spec} is not a target of this exercise (targets: {sorted(RUN.originals)})")
    return orig.function


def seed() -> int:
    """This test's seed for hidden inputs: drawn per judging, the same in every process of one judging."""
    return zlib.crc32(f"{RUN.seed}:{RUN.test}".encode()) & 0x7FFFFFFF


def rng() -> random.Random:
    """A fresh ``random.Random`` seeded with ``seed()``: hidden inputs that cannot be known in advance."""
    return random.Random(seed())


def hidden_prompts(n: int, min_len: int = 3, max_len: int = 12, vocab: int = 512,
                   r: random.Random | None = None) -> list[list[int]]:
    """``n`` token-id prompts of random lengths and ids (1 to vocab - 1), drawn from ``rng()``."""
    r = r or rng()
    return [[r.randrange(1, vocab) for _ in range(r.randint(min_len, max_len))] for _ in range(n)]


def expected(fn: str | Callable, *args: Any, **kwargs: Any) -> Any:
    """An expected value: ``fn(*args, **kwargs)`` computed with the engine's own code bound.

    ``fn`` is a target spec (its reference is called; a method takes ``self`` first) or a callable run
    with the reference bound (for example a whole generation). The result is a copy, so later changes to
    the objects it came from do not change it. Use it only on one side of an ``assert``.
    """
    from .checks import HIDDEN, Opaque, contains, plain

    if RUN.role == "learner":
        return HIDDEN  # the referee holds the value, computed in the reference's process
    call = original(fn) if isinstance(fn, str) else fn
    checks = RUN.checks
    if checks is not None:
        checks.muted += 1  # checks made while computing an expectation are not observations
    try:
        with reference_code():
            value = plain(call(*args, **kwargs))
    finally:
        if checks is not None:
            checks.muted -= 1
    if contains(value, Opaque):
        raise TypeError(f"expected({fn!r}) returned something that is not plain data ({value!r}): return "
                        "numbers, strings, lists, tuples, dicts or tensors (an exercise bug)")
    return value


@contextlib.contextmanager
def reference_code() -> Iterator[None]:
    """Run a block with the engine's own code in place of the learner's (e.g. to compute expected output)."""
    _no_reference("reference_code()")
    binding, submission = RUN.binding, RUN.submission
    if binding is None:
        yield
        return
    binding.restore()
    try:
        yield
    finally:
        binding.bind(submission)


def metric(name: str, value: float) -> None:
    RUN.metrics[str(name)] = float(value)


# ----------------------------------------------------------------------------------------------
# the engine on the tiny model, for the exercises' tests (torch and minisgl imported lazily)

#: Token-id prompts of different lengths (3 to 12 tokens) for the tiny models (vocabulary of 512).
#: Ids, not text: the tests never load a tokenizer (transformers' import alone costs a second).
PROMPT_IDS: list[list[int]] = [
    [17, 301, 45],
    [88, 12, 409, 230, 7, 156, 391, 64, 222],
    [5, 480, 133, 97, 310],
    [250, 19, 77, 402, 168, 3, 299, 51, 140, 466, 28, 333],
    [61, 205, 444, 90, 117, 382, 9],
    [36, 270, 158, 499, 23, 311],
]

_EAGER_CACHE: dict[tuple, list[list[int]]] = {}


def engine_device() -> str:
    """Where the engine runs for a test: CUDA in mode 'gpu', else the CPU (graphs are emulated there)."""
    return "cuda" if RUN.mode == "gpu" else "cpu"


_DRAW = object()  # engine()'s default for graph_bs: draw whether to capture graphs (None: graphs off)


@dataclass(frozen=True)
class EngineDraw:
    """An engine configuration drawn for one test from its seed (``draw_engine``): the same in every process of
    one judging and in every ``engine()`` of the test, so the learner's run and ``expected(...)``'s agree."""

    overlap: bool  # overlap scheduling on
    page_size: int
    chunked_prefill_size: int | None  # None: the default budget (nothing is chunked)
    tied: bool  # the tiny Qwen3 whose LM head is its embedding
    num_pages: int | None  # None: the default 256 pages; else a pool where requests wait and the cache evicts
    graph_bs: tuple[int, ...] | None  # CUDA graph batch sizes (emulated on a CPU); batches in between are padded

    def __str__(self) -> str:
        return ", ".join([
            f"overlap {'on' if self.overlap else 'off'}", f"page size {self.page_size}",
            f"chunked prefill {self.chunked_prefill_size} tokens" if self.chunked_prefill_size else "no chunking",
            "tied LM head" if self.tied else "untied LM head",
            f"{self.num_pages} KV pages" if self.num_pages else "256 KV pages",
            f"CUDA graphs {list(self.graph_bs)} (padded)" if self.graph_bs else "no CUDA graphs"])


def draws_engine() -> bool:
    """Whether ``engine()`` draws a configuration for the running test: only the hidden end-to-end tests (named
    ``test_engine_*`` or ``*same_tokens*``) do; a unit test that builds its set-up with ``engine()`` and the visible
    examples get the defaults (overlap off, page size 1, nothing chunked, untied, 256 pages, no graphs)."""
    from .promises import END_TO_END

    return bool(END_TO_END.search(RUN.test)) and not RUN.test.startswith("test_example")


def draw_engine() -> EngineDraw:
    """The engine configuration of the running test, drawn from its seed (apart from ``rng()``'s stream); the
    defaults where the test draws none (``draws_engine``)."""
    if not draws_engine():
        return EngineDraw(overlap=False, page_size=1, chunked_prefill_size=None, tied=False, num_pages=None,
                          graph_bs=None)
    r = random.Random(f"engine:{seed()}")
    page_size = r.choice([1, 1, 2, 4])
    small = r.random() < 0.4
    # the largest request (max_seq_len 64 tokens) always fits; a few more pages let some run side by side
    num_pages = -(-64 // page_size) + 2 + r.randint(0, 24 // page_size) if small else None
    return EngineDraw(overlap=r.random() < 0.5, page_size=page_size,
                      chunked_prefill_size=r.choice([None, r.randint(3, 12)]), tied=r.random() < 0.35,
                      num_pages=num_pages, graph_bs=r.choice([None, None, (1, 2, 4), (2, 3, 5), (3, 6)]))


def draw_note(judging_seed: int, test: str) -> str:
    """What a failed hidden end-to-end test's message adds: the engine drawn for it and how to draw it again."""
    state = (RUN.seed, RUN.test)
    RUN.seed, RUN.test = judging_seed, test
    try:
        drawn = draw_engine() if draws_engine() else None
    finally:
        RUN.seed, RUN.test = state
    if drawn is None:
        return ""
    return (f"\n(the engine drawn for this test from seed {judging_seed}, where the test sets none of its own: "
            f"{drawn}; --seed {judging_seed} draws it again)")


def tiny_llm(graph_bs: list[int] | None = None, *, device: str | None = None, backend: str | None = None,
             max_bs: int | None = None, tied: bool = False, **kw: Any) -> Any:
    """An LLM on the tiny random Qwen3: float32, 8 running requests, 256 KV pages, max_seq_len 64.

    graph_bs: the batch sizes to capture (None: graphs off, unless max_bs is given). On CUDA the
    backend is ``torch_static`` (the one a real capture accepts), on a CPU ``torch``. ``tied``: the
    Qwen3 whose LM head is its embedding.
    """
    import torch

    from minisgl.llm import LLM
    from minisgl.testing import tiny_model

    device = device or engine_device()
    backend = backend or ("torch_static" if device.startswith("cuda") else "torch")
    args: dict[str, Any] = dict(dtype=torch.float32, max_running_req=8, num_page_override=256,
                                max_seq_len_override=64, attention_backend=backend, device=device)
    if graph_bs is not None:
        args["cuda_graph_bs"] = list(graph_bs)
    args["cuda_graph_max_bs"] = max_bs if max_bs is not None else (None if graph_bs is not None else 0)
    args.update(kw)
    # prompts are token ids, so generate() never loads the tokenizer (nor imports transformers)
    return LLM(str(tiny_model("qwen3", tied=tied)), **args)


@contextlib.contextmanager
def engine(graph_bs: Any = _DRAW, *, overlap: bool | None = None, **kw: Any) -> Iterator[Any]:
    """``with engine() as llm:`` a tiny LLM that is shut down afterwards, whatever happens.

    In a hidden end-to-end test (``draws_engine``) what the test does not choose is drawn for it (``draw_engine``,
    from its seed): overlap scheduling, page size, chunked prefill, a tied or untied LM head, a small pool, CUDA
    graphs with padded batches; elsewhere these are the defaults (overlap off, page size 1, ...). What a test
    gives is kept (``page_size=4``, ``chunked_prefill_size=5``, ``num_page_override=30``, ``tied=False``,
    ``overlap=False``; ``graph_bs``: the sizes, or None for graphs off). ``RUN.drawn`` holds the draw; a failed
    test's message shows it. On the way out the overlap flag is put back as it was."""
    from minisgl.env import ENV

    d = draw_engine()
    drew = False
    if overlap is None:
        overlap, drew = d.overlap, True
    if graph_bs is _DRAW:
        graph_bs = list(d.graph_bs) if d.graph_bs and "max_bs" not in kw else None
        drew = True
    for key, value in (("page_size", d.page_size), ("chunked_prefill_size", d.chunked_prefill_size),
                       ("tied", d.tied), ("num_page_override", d.num_pages)):
        if key not in kw:
            drew = True
            if value is not None:
                kw[key] = value
    if drew and draws_engine():
        RUN.drawn = d
    before = ENV.DISABLE_OVERLAP_SCHEDULING.value
    ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
    try:
        llm = tiny_llm(graph_bs, **kw)
        try:
            yield llm
        finally:
            try:
                llm.shutdown()
            except Exception:  # noqa: BLE001 - a learner's broken state must not hide the real failure
                from minisgl.core import set_global_ctx

                set_global_ctx(None)
    finally:
        ENV.DISABLE_OVERLAP_SCHEDULING.value = before


def generate(llm: Any, prompts: list[list[int]], max_tokens: int) -> list[list[int]]:
    """Greedy new token ids, one list per prompt (EOS ignored: exactly max_tokens each)."""
    from minisgl.core import SamplingParams

    out = llm.generate([list(p) for p in prompts], SamplingParams(max_tokens=max_tokens, ignore_eos=True))
    return [list(o["token_ids"]) for o in out]


def eager_tokens(prompts: list[list[int]], max_tokens: int | list[int], device: str | None = None,
                 tied: bool | None = None) -> list[list[int]]:
    """The expected tokens: the engine's own code, no CUDA graphs (cached for the process). ``max_tokens``
    is one count for all prompts, or one per prompt (each prompt then generated alone). ``tied``: the model
    (None: the one ``engine()`` uses in this test, drawn or not)."""
    device = device or engine_device()
    counts = tuple(max_tokens) if isinstance(max_tokens, (list, tuple)) else max_tokens
    tied = draw_engine().tied if tied is None else tied
    key = (tuple(map(tuple, prompts)), counts, device, RUN.role, tied)
    if key not in _EAGER_CACHE:
        _EAGER_CACHE[key] = expected(_eager_run, [list(p) for p in prompts], counts, device, tied)
    from .checks import plain

    return plain(_EAGER_CACHE[key])  # a fresh copy: the caller may change it


def _eager_run(prompts: list[list[int]], max_tokens: int | tuple[int, ...], device: str,
               tied: bool) -> list[list[int]]:
    with engine(None, device=device, tied=tied) as llm:
        if isinstance(max_tokens, int):
            return generate(llm, prompts, max_tokens)
        return [generate(llm, [p], n)[0] for p, n in zip(prompts, max_tokens)]  # each prompt alone


class Trace:
    """Records what the engine does while it generates: every forward batch and every graph replay.

        trace = Trace(llm)
        tokens = generate(llm, prompts, 6)
        trace.decode_steps  # [(size, padded_size), ...] of every decode batch
        trace.replays       # [(size, padded_size, rows of the returned logits), ...]
    """

    def __init__(self, llm: Any):
        self.decode_steps: list[tuple[int, int]] = []
        self.prefill_steps: list[tuple[int, int]] = []
        self.replays: list[tuple[int, int, int]] = []
        eng = llm.engine
        runner = eng.graph_runner
        forward_batch, replay = eng.forward_batch, runner.replay

        def traced_forward(batch: Any) -> Any:
            steps = self.decode_steps if batch.is_decode else self.prefill_steps
            steps.append((batch.size, batch.padded_size))
            return forward_batch(batch)

        def traced_replay(batch: Any) -> Any:
            size, padded = batch.size, batch.padded_size
            logits = replay(batch)
            self.replays.append((size, padded, int(logits.shape[0]) if hasattr(logits, "shape") else -1))
            return logits

        eng.forward_batch = traced_forward
        runner.replay = traced_replay

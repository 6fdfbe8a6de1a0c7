"""Tests for graph-capture-loop: GraphRunner._capture_graphs, through what the engine did while it captured."""

import contextlib

import torch

from judge.testing import PROMPT_IDS, eager_tokens, engine, engine_device, gpu, hidden_prompts, rng, tiny_llm
from minisgl.attention.torch_backend import TorchAttnBackend
from minisgl.core import Batch, SamplingParams, get_global_ctx, set_global_ctx
from minisgl.engine.graph import GraphCaptureBuffer, GraphRunner
from minisgl.models.qwen3 import Qwen3ForCausalLM

# graph lists whose sizes are not all powers of two, with lengths and sizes that differ
GRAPH_LISTS = [[2, 3, 5], [3, 5, 6], [2, 5, 7], [1, 3, 6, 7]]
SENTINEL = -1234.5  # never a logit of the tiny model


class CaptureLog:
    """What happened while the engine started: the backend's init_capture_graph and prepare_for_capture calls,
    and every model forward (its batch, and whether its inputs and metadata viewed the fixed buffers)."""

    def __init__(self):
        self.inits, self.captures, self.forwards = [], [], []
        self.error = ""  # the exception that stopped the engine from starting, if any (as text)
        self.exc: BaseException | None = None
        # with the CUDA stand-in (started(..., cuda=True)): each torch.cuda.graph(...) entered, the pools handed
        # out, the devices GraphCaptureBuffer.init was given, and whether a stand-in capture is open
        self.cuda_captures: list[dict] = []
        self.pools: list[tuple] = []
        self.buffer_devices: list = []
        self.capturing = False


class StandInCUDAGraph:
    """NOT CUDA: a stand-in for torch.cuda.CUDAGraph, so that the CUDA branch of your loop is checked on a machine
    without a GPU (this one, the browser, CI). It records how it was captured and cannot replay; on a GPU runner
    test_gpu_one_memory_pool checks real graphs."""

    def __init__(self, log: CaptureLog):
        self._pool = ("stand-in memory pool", len(log.pools))
        log.pools.append(self._pool)

    def pool(self) -> tuple:
        return self._pool

    def replay(self) -> None:
        raise RuntimeError("a stand-in for torch.cuda.CUDAGraph cannot replay")

    def reset(self) -> None:
        pass


def stand_in_cuda(log: CaptureLog) -> dict:
    """torch.cuda's CUDAGraph, graph and graph_pool_handle as stand-ins that record into ``log`` (NOT CUDA)."""

    def graph_pool_handle() -> tuple:
        handle = ("stand-in memory pool handle", len(log.pools))
        log.pools.append(handle)
        return handle

    @contextlib.contextmanager
    def graph(cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if not isinstance(cuda_graph, StandInCUDAGraph):
            raise TypeError(f"torch.cuda.graph(cuda_graph, ...): cuda_graph must be a torch.cuda.CUDAGraph, got "
                            f"{type(cuda_graph).__name__}")
        if pool is not None and pool not in log.pools:
            raise TypeError(f"torch.cuda.graph(..., pool=...): pool must be None or a memory pool handle (a "
                            f"graph's graph.pool() or torch.cuda.graph_pool_handle()), got {pool!r}")
        batch = get_global_ctx()._batch
        log.cuda_captures.append({"graph": cuda_graph, "pool": pool, "stream": stream,
                                  "size": batch.size if batch is not None else None})
        log.capturing = True
        try:
            yield
        finally:
            log.capturing = False

    return {"CUDAGraph": lambda: StandInCUDAGraph(log), "graph": graph, "graph_pool_handle": graph_pool_handle}


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


@contextlib.contextmanager
def patched(obj, values: dict):
    """``obj``'s attributes set to ``values`` inside the block, then as they were (absent ones removed again)."""
    missing = object()
    saved = {name: obj.__dict__.get(name, missing) for name in values}
    for name, value in values.items():
        setattr(obj, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


@contextlib.contextmanager
def started(graphs: list, cuda: bool = False):
    """``with started([2, 3, 5]) as (llm, log):`` the tiny engine started with your capture loop (llm is None if
    it failed to start: log.error says why), and the log of what the capture did. ``cuda=True``: your loop sees
    ``is_cuda(self.device)`` answer True and captures with stand-ins for torch.cuda's graphs (NOT CUDA: the
    engine still runs on the CPU)."""
    log = CaptureLog()
    init, prepare = TorchAttnBackend.init_capture_graph, TorchAttnBackend.prepare_for_capture
    had_forward, forward = "forward" in Qwen3ForCausalLM.__dict__, Qwen3ForCausalLM.forward

    def logged_init(self, max_seq_len, bs_list):
        log.inits.append((int(max_seq_len), sorted(int(b) for b in bs_list)))
        return init(self, max_seq_len=max_seq_len, bs_list=bs_list)

    def logged_prepare(self, batch):
        log.captures.append(batch.size)
        return prepare(self, batch)

    def logged_forward(self, *args, **kwargs):
        batch = get_global_ctx()._batch
        entry = {"in_ctx": batch is not None, "capturing": _capturing() or log.capturing, "size": None,
                 "phase": None, "reqs": [], "padded": [], "inputs": None, "seq_lens": None}
        if batch is not None:
            meta = batch.attn_metadata
            seq_lens = getattr(meta, "cache_seqlens", None)
            entry.update(size=batch.size, phase=batch.phase, reqs=list(batch.reqs), padded=list(batch.padded_reqs),
                         inputs=batch.input_ids.data_ptr() if batch.input_ids is not None else None,
                         seq_lens=seq_lens.data_ptr() if seq_lens is not None else None)
        log.forwards.append(entry)
        return forward(self, *args, **kwargs)

    def logged_buffer(cls, *args, **kwargs):
        log.buffer_devices.append(kwargs["device"] if "device" in kwargs else args[2] if len(args) > 2 else None)
        return buffer_init(*args, **kwargs)

    TorchAttnBackend.init_capture_graph = logged_init
    TorchAttnBackend.prepare_for_capture = logged_prepare
    Qwen3ForCausalLM.forward = logged_forward
    buffer_init = GraphCaptureBuffer.init
    loop = GraphRunner._capture_graphs
    cuda_patches = contextlib.ExitStack()
    if cuda:  # the names your loop reads, in its own module: is_cuda, and torch.cuda's graphs
        cuda_patches.enter_context(patched(torch.cuda, stand_in_cuda(log)))
        cuda_patches.enter_context(patched(GraphCaptureBuffer, {"init": classmethod(logged_buffer)}))
        globals_ = getattr(loop, "__globals__", {})
        if "is_cuda" in globals_:
            cuda_patches.enter_context(patched_item(globals_, "is_cuda", lambda device: True))
    llm = None
    try:
        try:
            with cuda_patches:
                llm = tiny_llm(graphs)
        except Exception as e:  # noqa: BLE001 - your loop broke the engine's start: the tests say how
            log.error, log.exc = f"{type(e).__name__}: {e}", e
            set_global_ctx(None)
    finally:
        TorchAttnBackend.init_capture_graph, TorchAttnBackend.prepare_for_capture = init, prepare
        if had_forward:
            Qwen3ForCausalLM.forward = forward
        else:
            del Qwen3ForCausalLM.forward
    try:
        yield llm, log
    finally:
        if llm is not None:
            try:
                llm.shutdown()
            except Exception:  # noqa: BLE001
                set_global_ctx(None)


@contextlib.contextmanager
def patched_item(mapping: dict, key: str, value):
    saved = mapping[key]
    mapping[key] = value
    try:
        yield
    finally:
        mapping[key] = saved


def why(log) -> str:
    return f" (the engine's start then failed with {log.error})" if log.error else ""


def started_ok(llm, log) -> None:
    """The engine started; if your loop raised, the same exception (with its traceback) fails the test."""
    if llm is None:
        raise log.exc


def test_example_records_every_size():
    """Graphs [2, 3, 5]: one graph per size, captured largest first, one buffer sized for the largest, the
    backend's capture buffers allocated for the same sizes."""
    with started([2, 3, 5]) as (llm, log):
        started_ok(llm, log)
        runner, backend = llm.engine.graph_runner, llm.engine.attn_backend
        vocab, seq = llm.engine.model_config.vocab_size, llm.engine.max_seq_len
        recorded = sorted(runner.graph_map)
        assert recorded == [2, 3, 5], "self.graph_map must have one graph per size, keyed by the batch size"
        assert runner.buffer is not None, "self.buffer must be set (GraphCaptureBuffer.init)"
        buffer_shapes = (list(runner.buffer.input_ids.shape), list(runner.buffer.logits.shape))
        assert buffer_shapes == ([5], [5, vocab]), "one buffer, sized for the largest batch (self.max_graph_bs = 5)"
        assert backend.capture is not None, "call self.attn_backend.init_capture_graph first"
        capture_bs = list(backend.capture_bs)
        assert capture_bs == [2, 3, 5], "init_capture_graph(bs_list=self.graph_bs_list)"
        table = list(backend.capture.page_table.shape)
        assert table == [5, seq], "init_capture_graph(max_seq_len=max_seq_len, ...): the page table is [5, max_seq_len]"
        order = list(log.captures)
        assert order == [5, 3, 2], "the sizes captured, in order: the largest first (it sizes the memory pool)"


def test_example_same_tokens_with_graphs():
    """Graphs [2, 3, 5], 4 prompts finishing at different times: every decode step replays, and the tokens
    equal those of the runs without graphs."""
    prompts, max_tokens = PROMPT_IDS[:4], [3, 4, 5, 6]
    want = eager_tokens(prompts, max_tokens)
    with started([2, 3, 5]) as (llm, log):
        started_ok(llm, log)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [list(o["token_ids"]) for o in out]
    assert got == want, "the tokens differ from the runs without graphs"


def test_capture_buffers_allocated_once_first():
    """init_capture_graph is called once, before any prepare_for_capture, with max_seq_len and the sizes."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        seq = llm.engine.max_seq_len if llm is not None else None
        inits = len(log.inits)
        assert inits == 1, (f"self.attn_backend.init_capture_graph was called {inits} times: call it once, before "
                            "the loop" + why(log))
        started_ok(llm, log)
        assert log.inits == [(seq, graphs)], "init_capture_graph(max_seq_len=max_seq_len, bs_list=self.graph_bs_list)"


def test_largest_first():
    """Hidden graph lists: the sizes are captured from the largest to the smallest (the first capture sizes the
    memory pool)."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        order = list(log.captures)
    assert order == sorted(graphs, reverse=True), f"graphs {graphs}: capture the largest size first, then the next"


def test_graph_bs_list_left_as_it_is():
    """Capturing largest first must not reorder self.graph_bs_list itself: it stays ascending (pad_batch pads a
    batch to its first size that fits, so a descending list would pad every batch to the largest graph)."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        runner = llm.engine.graph_runner
        after = list(runner.graph_bs_list)
        padded_to = []
        for n in range(1, max(graphs) + 1):
            batch = Batch(reqs=[runner.dummy_req] * n, phase="decode")
            runner.pad_batch(batch)
            padded_to.append(batch.padded_size)
    assert after == graphs, (f"graphs {graphs}: after the capture self.graph_bs_list is {after}; capture largest "
                             "first from a sorted copy, and leave the list itself ascending")
    want = [min(bs for bs in graphs if bs >= n) for n in range(1, max(graphs) + 1)]
    assert padded_to == want, f"graphs {graphs}: after the capture, decode batches of 1..{max(graphs)} must pad to {want}"


def test_forwards_inside_forward_batch():
    """Every model.forward() during capture runs inside get_global_ctx().forward_batch(batch)."""
    with started(rng().choice(GRAPH_LISTS)) as (llm, log):
        outside = sum(1 for f in log.forwards if not f["in_ctx"])
        assert outside == 0, ("model.forward() ran with no batch being forwarded: run the warm-up and the capture "
                              "inside `with get_global_ctx().forward_batch(batch):`")
        started_ok(llm, log)


def test_capture_batches_are_decode_batches_of_dummies():
    """Each size is captured on a decode batch of exactly bs requests, all of them the dummy request."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        dummy = llm.engine.dummy_req
        for f in log.forwards:
            bs = f["size"]
            phase = f["phase"]
            assert phase == "decode", f"the capture of {bs}: the batch must be a decode batch (phase='decode')"
            sizes = (len(f["reqs"]), len(f["padded"]))
            assert sizes == (bs, bs), f"the capture of {bs}: the batch must have {bs} requests, padded_reqs == reqs"
            all_dummy = all(r is dummy for r in f["reqs"] + f["padded"])
            assert all_dummy, f"the capture of {bs}: the batch must be {bs} times self.dummy_req"
        sizes = sorted({f["size"] for f in log.forwards})
        assert sizes == graphs, f"graphs {graphs}: one capture batch per size"


def test_inputs_and_metadata_view_the_fixed_buffers():
    """At capture every forward reads its inputs from the one shared buffer (set_batch) and its metadata from
    the backend's capture buffers (prepare_for_capture)."""
    with started(rng().choice(GRAPH_LISTS)) as (llm, log):
        forwards = [f for f in log.forwards if f["in_ctx"]]
        assert forwards != [], "no model.forward() ran inside forward_batch during capture" + why(log)
        has_metadata = all(f["seq_lens"] is not None for f in forwards)
        assert has_metadata, ("at capture the batch had no TorchAttnMetadata: call "
                              "self.attn_backend.prepare_for_capture(batch)" + why(log))
        has_inputs = all(f["inputs"] is not None for f in forwards)
        assert has_inputs, "at capture the batch had no input_ids: call self.buffer.set_batch(batch)" + why(log)
        started_ok(llm, log)
        runner, backend = llm.engine.graph_runner, llm.engine.attn_backend
        for f in forwards:
            shared = f["inputs"] == runner.buffer.input_ids.data_ptr()
            assert shared, (f"the capture of {f['size']} read input_ids that are not a view of runner.buffer: "
                            "allocate one GraphCaptureBuffer before the loop and set_batch from it")
            metadata = f["seq_lens"] == backend.capture.seq_lens.data_ptr()
            assert metadata, f"the capture of {f['size']} read metadata that does not view backend.capture"


def test_one_buffer_for_the_largest_size():
    """Hidden graph lists: self.buffer has max_graph_bs rows (not one per graph, not the number of graphs)."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        runner = llm.engine.graph_runner
        shapes = [list(runner.buffer.input_ids.shape), list(runner.buffer.positions.shape),
                  list(runner.buffer.out_loc.shape), list(runner.buffer.logits.shape)[:1]]
        assert shapes == [[max(graphs)]] * 4, f"graphs {graphs}: the buffer must be sized for the largest, {max(graphs)}"


def test_one_graph_per_size_keyed_by_size():
    """Hidden graph lists: self.graph_map has one graph per size of graph_bs_list, keyed by the batch size."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        keys = sorted(llm.engine.graph_runner.graph_map)
    assert keys == graphs, f"graphs {graphs}: self.graph_map must have the keys {graphs} (one graph per size), got {keys}"


def test_warm_up_before_capture():
    """Each size runs the model once eagerly (the warm-up) before its graph is recorded: on a CPU one forward per
    size during capture (an EmulatedGraph runs nothing when it is made), on CUDA two (warm-up, then recorded)."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        cuda = engine_device().startswith("cuda")
        forwards = [(f["size"], f["capturing"]) for f in log.forwards]
    per_size = [(False,), (False, True)][cuda]
    want = [(bs, c) for bs in sorted(graphs, reverse=True) for c in per_size]
    assert forwards == want, ("warm up every size once with logits.copy_(model.forward()) before recording it "
                              "(on CUDA: then once more inside torch.cuda.graph)")


def test_each_graph_writes_its_logits():
    """Replaying graph_map[bs] writes bs rows of logits into self.buffer.logits[:bs] (the graph's output)."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        runner = llm.engine.graph_runner
        logits = runner.buffer.logits
        for bs in sorted(graphs, reverse=True):
            logits.fill_(SENTINEL)
            error = ""
            try:
                runner.graph_map[bs].replay()
            except Exception as e:  # noqa: BLE001 - a graph that cannot replay: the message says which
                error = f"{type(e).__name__}: {e}"
            assert error == "", f"graph_map[{bs}].replay() raised: each graph must write its own slice logits[:{bs}]"
            written = not bool((logits[:bs] == SENTINEL).any())
            assert written, (f"graph_map[{bs}].replay() did not write self.buffer.logits[:{bs}]: the recorded "
                             "forward must be logits.copy_(model.forward()) into that slice")


def test_hidden_prompts_every_graph_in_use():
    """Hidden prompts finishing at different times on a hidden graph list: every decode step replays the graph
    of its padded size, and the tokens are those of the runs without graphs."""
    r = rng()
    graphs = r.choice(GRAPH_LISTS)
    prompts, max_tokens = hidden_prompts(max(graphs), r=r), r.sample(range(2, 10), max(graphs))
    want = eager_tokens(prompts, max_tokens)
    with started(graphs) as (llm, log):
        started_ok(llm, log)
        replays = []
        runner = llm.engine.graph_runner
        replay = runner.replay

        def traced(batch):
            replays.append(batch.padded_size)
            return replay(batch)

        runner.replay = traced
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [list(o["token_ids"]) for o in out]
    steps = max(max_tokens) - 1
    count = len(replays)
    assert count == steps, f"graphs {graphs}: every one of the {steps} decode steps must replay a graph"
    assert got == want, "the tokens differ from the runs without graphs"


def test_cuda_branch_records_each_size_into_its_own_graph():
    """On CUDA (here with stand-ins for torch.cuda's graphs: NOT CUDA, the engine runs on the CPU): each size is
    warmed up, then recorded once inside torch.cuda.graph(graph, pool=pool, stream=self.stream) on a
    torch.cuda.CUDAGraph of its own, and that graph is graph_map[bs]."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs, cuda=True) as (llm, log):
        started_ok(llm, log)
        runner = llm.engine.graph_runner
        forwards = [(f["size"], f["capturing"]) for f in log.forwards]
        sizes = [c["size"] for c in log.cuda_captures]
        assert sizes == sorted(graphs, reverse=True), (
            f"graphs {graphs}, is_cuda(self.device) True: record each size once, largest first, inside "
            f"`with torch.cuda.graph(graph, pool=pool, stream=self.stream):` (recorded: {sizes}); choose the branch "
            "with is_cuda(self.device)")
        want = [(bs, c) for bs in sorted(graphs, reverse=True) for c in (False, True)]
        assert forwards == want, ("on CUDA each size runs logits.copy_(model.forward()) twice: once eagerly (the "
                                  "warm-up), then once inside torch.cuda.graph(...)")
        for c in log.cuda_captures:
            own = runner.graph_map.get(c["size"]) is c["graph"]
            assert own, f"graph_map[{c['size']}] must be the torch.cuda.CUDAGraph recorded for {c['size']}"
            on_stream = c["stream"] is runner.stream
            assert on_stream, "record on the runner's stream: torch.cuda.graph(graph, pool=pool, stream=self.stream)"
        distinct = len({id(c["graph"]) for c in log.cuda_captures})
        assert distinct == len(graphs), "each size needs a torch.cuda.CUDAGraph() of its own"


def test_cuda_graphs_share_one_memory_pool():
    """On CUDA (stand-ins, NOT CUDA): the memory pool of the first graph recorded (graph.pool()) is passed to every
    later capture, so all graphs share one pool."""
    graphs = rng().choice(GRAPH_LISTS)
    with started(graphs, cuda=True) as (llm, log):
        started_ok(llm, log)
        captures = log.cuda_captures
        assert len(captures) == len(graphs), f"graphs {graphs}: one torch.cuda.graph(...) per size" + why(log)
        first = captures[0]["pool"] if captures[0]["pool"] is not None else captures[0]["graph"].pool()
        later = [c["pool"] for c in captures[1:]]
        assert later == [first] * len(later), (
            "every graph after the first must be recorded with pool=pool, the first graph's graph.pool(): all "
            f"graphs share one memory pool (the pools passed, largest size first: {[c['pool'] for c in captures]})")


def test_buffer_made_on_the_runners_device():
    """Step 2 makes the buffer on self.device: GraphCaptureBuffer.init(self.max_graph_bs, vocab_size, self.device)
    (on CUDA every graph reads its inputs there)."""
    with started(rng().choice(GRAPH_LISTS), cuda=True) as (llm, log):
        started_ok(llm, log)
        device = llm.engine.graph_runner.device
        devices = [None if d is None else torch.device(d) for d in log.buffer_devices]
        assert devices == [device], (f"GraphCaptureBuffer.init was called with devices {log.buffer_devices}: call "
                                     f"it once, with self.device ({device})")


@gpu
def test_gpu_one_memory_pool():
    """Real CUDA graphs (torch_static backend): all graphs share one memory pool, and the tokens are the
    eager ones."""
    prompts = hidden_prompts(3)
    want = eager_tokens(prompts, 6, device="cuda")
    with engine([2, 3, 5], device="cuda") as llm:
        graphs = llm.engine.graph_runner.graph_map
        kinds = sorted({type(g).__name__ for g in graphs.values()})
        assert kinds == ["CUDAGraph"], "on CUDA each graph is a torch.cuda.CUDAGraph"
        pools = {tuple(g.pool()) if isinstance(g.pool(), (tuple, list)) else g.pool() for g in graphs.values()}
        shared = len(pools) == 1
        assert shared, "every graph after the first must be captured with pool=pool (one shared memory pool)"
        out = llm.generate([list(p) for p in prompts], SamplingParams(max_tokens=6, ignore_eos=True))
        torch.cuda.synchronize()
    got = [list(o["token_ids"]) for o in out]
    assert got == want, "the tokens differ from the run without graphs"

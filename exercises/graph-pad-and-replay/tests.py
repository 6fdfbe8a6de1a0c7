"""Tests for graph-pad-and-replay: GraphRunner.pad_batch and GraphRunner.replay."""

import torch

from judge.testing import PROMPT_IDS, eager_tokens, engine, gpu, hidden_prompts, rng
from minisgl.core import Batch, Req, SamplingParams, get_global_ctx
from minisgl.engine.graph import GraphRunner

FIELDS = ("input_ids", "out_loc", "positions")
# graph lists of sizes that are not all powers of two, and whose lengths and sizes differ
GRAPH_LISTS = [[2, 3, 5], [3, 5, 6], [2, 5, 7], [1, 3, 6, 7], [3, 7]]


def reqs(n: int) -> list:
    return [Req(input_ids=[11, 12, 13], table_idx=i, cached_len=2, output_len=5, uid=i) for i in range(n)]


def padded(runner, n: int, phase: str = "decode") -> Batch:
    batch = Batch(reqs=reqs(n), phase=phase)
    runner.pad_batch(batch)
    return batch


def nearest(graphs: list, n: int) -> int:
    """The test's own rule: the smallest recorded size >= n (n itself when none fits)."""
    fits = [bs for bs in graphs if bs >= n]
    return min(fits) if fits else n


def decode_sizes(max_tokens: list) -> list:
    """The size of every decode batch when all prompts are prefilled together: those still generating."""
    return [sum(1 for n in max_tokens if n > k) for k in range(1, max(max_tokens))]


class Watched:
    """A recorded graph wrapped so that its replay first notes what the fixed buffers hold."""

    def __init__(self, graph, before):
        self.graph, self.before = graph, before

    def replay(self):
        self.before()
        return self.graph.replay()

    def __getattr__(self, name):
        return getattr(self.graph, name)


class Watch:
    """What ran: every decode batch, and for every call of runner.replay, which graphs replayed, whether the
    inputs and the attention metadata were in the fixed buffers at that moment, and what replay returned."""

    def __init__(self, llm):
        eng = llm.engine
        runner, backend, vocab = eng.graph_runner, eng.attn_backend, eng.model_config.vocab_size
        self.decode, self.calls = [], []
        forward_batch, replay = eng.forward_batch, runner.replay
        buffers = {f: getattr(runner.buffer, f) for f in FIELDS}  # the tensors the graphs recorded
        seq_lens, page_table = backend.capture.seq_lens, backend.capture.page_table

        def traced_forward(batch):
            if batch.is_decode:
                self.decode.append((batch.size, batch.padded_size))
            return forward_batch(batch)

        def traced_replay(batch):
            call = {"size": batch.size, "padded": batch.padded_size, "graphs": [], "inputs": [], "metadata": []}
            self.calls.append(call)
            logits = replay(batch)
            is_tensor = type(logits) is torch.Tensor  # a plain tensor: compared by value, not through its own __eq__
            call["shape"] = [int(d) for d in logits.shape] if is_tensor else type(logits).__name__
            real = runner.buffer.logits[: batch.size]
            call["rows"] = is_tensor and call["shape"] == [batch.size, vocab] and bool(torch.equal(logits, real))
            return logits[: batch.size]  # keep the engine going whatever came back

        def before(bs):
            batch = get_global_ctx().batch  # the batch being forwarded (the graph itself sees only buffers)
            n, meta = batch.padded_size, batch.attn_metadata
            width = meta.page_table.shape[1]
            call = self.calls[-1] if self.calls else {"graphs": [], "inputs": [], "metadata": []}
            call["graphs"].append(bs)
            call["inputs"].append(all(buffers[f][:n].tolist() == getattr(batch, f).tolist() for f in FIELDS))
            call["metadata"].append(seq_lens[:n].tolist() == meta.cache_seqlens.tolist()
                                    and page_table[:n, :width].tolist() == meta.page_table.tolist())

        eng.forward_batch, runner.replay = traced_forward, traced_replay
        for bs in list(runner.graph_map):
            runner.graph_map[bs] = Watched(runner.graph_map[bs], lambda bs=bs: before(bs))


def generate_watched(graphs: list, prompts: list, max_tokens: list):
    want = eager_tokens(prompts, max_tokens)
    with engine(graphs) as llm:
        watch = Watch(llm)
        out = llm.generate([list(p) for p in prompts],
                           [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    return [list(o["token_ids"]) for o in out], want, watch


def test_example_pad_four_to_five():
    """Graphs [2, 3, 5]: a decode batch of 4 is padded to 5 with the dummy request, after its own 4."""
    with engine([2, 3, 5]) as llm:
        runner = llm.engine.graph_runner
        batch = padded(runner, 4)
        padded_size = batch.padded_size
        assert padded_size == 5, "4 requests on graphs [2, 3, 5] are padded to 5, the smallest size >= 4"
        real_first = all(a is b for a, b in zip(batch.padded_reqs[:4], batch.reqs))
        assert real_first, "padded_reqs must start with the batch's own requests, in order"
        dummy = batch.padded_reqs[4] is runner.dummy_req
        assert dummy, "pad with runner.dummy_req"


def test_example_same_tokens_with_graphs():
    """Graphs [2, 3, 5], 4 prompts finishing at different times: each decode step replays the graph of its
    padded size (5, 5, 3, 2, 2), returns the real requests' rows, and the tokens equal those of the runs without
    graphs."""
    got, want, watch = generate_watched([2, 3, 5], PROMPT_IDS[:4], [3, 4, 5, 6])
    replayed = [(c["size"], c["padded"], c["graphs"]) for c in watch.calls]
    assert replayed == [(4, 5, [5]), (4, 5, [5]), (3, 3, [3]), (2, 2, [2]), (1, 2, [2])], \
        "(size, padded size, graphs replayed) of every decode step"
    rows = [c["rows"] for c in watch.calls]
    assert rows == [True] * 5, ("whether each replay returned self.buffer.logits[:batch.size], the rows of the real "
                                "requests only (not those of the padding)")
    assert got == want, "the tokens differ from the runs without graphs"


def test_pad_to_the_nearest_size():
    """Hidden graph lists (not powers of two): every decode size pads to the smallest recorded size >= it."""
    graphs = rng().choice(GRAPH_LISTS)
    with engine(graphs) as llm:
        runner = llm.engine.graph_runner
        for n in range(1, max(graphs) + 1):
            got = padded(runner, n).padded_size
            assert got == nearest(graphs, n), \
                f"graphs {graphs}: a decode batch of {n} must be padded to {nearest(graphs, n)}, the smallest size >= {n}"


def test_pad_with_the_dummy_request():
    """The padding is runner.dummy_req, repeated, and nothing else."""
    with engine([3, 7]) as llm:
        runner = llm.engine.graph_runner
        for n in (1, 2, 3, 4, 5, 6):
            extra = list(padded(runner, n).padded_reqs)[n:]
            count = len(extra)
            assert count == nearest([3, 7], n) - n, f"graphs [3, 7]: a batch of {n} gets {nearest([3, 7], n) - n} dummies"
            all_dummy = all(r is runner.dummy_req for r in extra)
            assert all_dummy, f"a batch of {n} must be padded with runner.dummy_req only (not copies of real requests)"


def unrecorded_sizes(graphs: list) -> list:
    """The decode sizes up to the largest graph that have no graph of their own (they get dummies)."""
    return [n for n in range(1, max(graphs)) if n not in graphs]


def test_real_requests_first_in_order():
    """padded_reqs is the batch's requests, in their order, then the dummies (logits[:size] are the real ones)."""
    r = rng()
    graphs = r.choice(GRAPH_LISTS)
    n = r.choice([k for k in unrecorded_sizes(graphs) if k > 1])
    with engine(graphs) as llm:
        runner = llm.engine.graph_runner
        batch = padded(runner, n)
        padded_reqs, own = list(batch.padded_reqs), list(batch.reqs)
        head = len(padded_reqs) > n and all(a is b for a, b in zip(padded_reqs[:n], own))
        assert head, (f"graphs {graphs}: padded_reqs[:{n}] must be the batch's own {n} requests, in order "
                      "(the dummies come after)")


def test_batch_reqs_left_alone():
    """pad_batch builds a new list: batch.reqs keeps exactly the real requests (batch.size does not change)."""
    r = rng()
    graphs = r.choice(GRAPH_LISTS)
    n = r.choice(unrecorded_sizes(graphs))
    with engine(graphs) as llm:
        runner = llm.engine.graph_runner
        own = reqs(n)
        batch = Batch(reqs=own, phase="decode")
        kept = list(own)
        runner.pad_batch(batch)
        size = batch.size
        assert size == n, (f"batch.reqs must keep its {n} real requests: do not append the dummies to it "
                           "(build a new list)")
        same = len(batch.reqs) == n and all(a is b for a, b in zip(batch.reqs, kept))
        assert same, "batch.reqs must be left as it was"


def test_no_padding_for_prefill():
    """A prefill batch is never padded, even when a graph would fit it."""
    graphs = rng().choice(GRAPH_LISTS)
    with engine(graphs) as llm:
        runner = llm.engine.graph_runner
        for n in unrecorded_sizes(graphs):
            batch = padded(runner, n, phase="prefill")
            got = batch.padded_size
            assert got == n, f"a prefill batch of {n} must not be padded (only decode batches replay a graph)"


def test_no_padding_when_no_graph_fits():
    """A decode batch larger than the largest graph is not padded (and pad_batch does not fail)."""
    r = rng()
    graphs = r.choice(GRAPH_LISTS)
    n = max(graphs) + r.randint(1, 3)
    with engine(graphs) as llm:
        runner = llm.engine.graph_runner
        batch = Batch(reqs=reqs(n), phase="decode")
        raised = ""
        try:
            runner.pad_batch(batch)
        except StopIteration:
            raised = "StopIteration"
        assert raised == "", (f"a decode batch of {n} with graphs up to {max(graphs)} must not be padded, and "
                              "pad_batch must not raise (check self.can_use_cuda_graph(batch) first)")
        got = batch.padded_size
        assert got == n, f"no graph fits {n} requests: padded_reqs must be the requests themselves"


def test_replay_copies_before_the_graph():
    """At the moment a graph replays, the fixed buffers hold this step's inputs and attention metadata
    (copy_from and prepare_for_replay ran first)."""
    prompts = hidden_prompts(4)
    got, want, watch = generate_watched([2, 3, 5], prompts, [3, 4, 5, 6])
    for step, call in enumerate(watch.calls):
        where = f"decode step {step} ({call['size']} requests padded to {call['padded']})"
        inputs = all(call["inputs"]) and call["inputs"] != []
        assert inputs, f"{where}: the graph replayed before this step's inputs were copied (self.buffer.copy_from(batch))"
        metadata = all(call["metadata"]) and call["metadata"] != []
        assert metadata, (f"{where}: the graph replayed before this step's attention metadata was copied "
                          "(self.attn_backend.prepare_for_replay(batch))")
    assert got == want, "the tokens differ from the runs without graphs"


def test_replay_runs_the_graph_of_the_padded_size():
    """Hidden graph lists and prompts: each decode step that fits a graph replays graph_map[padded size] once
    (and no other graph); larger batches run without a graph."""
    r = rng()
    graphs = r.choice([g for g in GRAPH_LISTS if max(g) >= 5])
    max_tokens = r.sample(range(2, 9), 6)
    got, want, watch = generate_watched(graphs, hidden_prompts(6), max_tokens)
    sizes = decode_sizes(max_tokens)
    steps = list(watch.decode)
    assert steps == [(n, nearest(graphs, n)) for n in sizes], \
        f"graphs {graphs}: (size, padded size) of every decode batch"
    replayed = [(c["size"], c["padded"], c["graphs"]) for c in watch.calls]
    assert replayed == [(n, nearest(graphs, n), [nearest(graphs, n)]) for n in sizes if n <= max(graphs)], \
        f"graphs {graphs}: each decode step that fits replays graph_map[batch.padded_size] once"
    assert got == want, "the tokens differ from the runs without graphs"


def test_replay_returns_only_the_real_rows():
    """replay returns the first batch.size rows of self.buffer.logits: one row per real request."""
    got, want, watch = generate_watched([3, 7], hidden_prompts(5), [4, 3, 6, 2, 5])
    for step, call in enumerate(watch.calls):
        assert call["rows"], (f"decode step {step}: {call['size']} requests padded to {call['padded']}: replay must "
                              f"return self.buffer.logits[:{call['size']}], the first rows (those of the real "
                              f"requests); it returned a tensor of shape {call['shape']} with other rows")
    assert got == want, "the tokens differ from the runs without graphs"


# Unit level: a GraphRunner built without the engine (no capture), with stand-ins that log what replay calls.

def bare_runner(graphs: list) -> GraphRunner:
    """A GraphRunner holding only what pad_batch needs: its graph list (and graph_map's keys, for a pad_batch
    that reads the recorded sizes there) and its dummy request."""
    runner = GraphRunner.__new__(GraphRunner)
    runner.graph_bs_list = list(graphs)
    runner.graph_map = dict.fromkeys(graphs)
    runner.dummy_req = Req(input_ids=[0], table_idx=9, cached_len=0, output_len=1, uid=-1)
    return runner


def test_unit_pad_to_the_nearest_size():
    """Without the engine, on [3, 7] then a hidden graph list: every decode size up to the largest graph pads
    to the smallest recorded size >= it (on [3, 7]: 3 gets no dummy, 1 gets two)."""
    for graphs in ([3, 7], rng().choice(GRAPH_LISTS)):
        runner = bare_runner(graphs)
        for n in range(1, max(graphs) + 1):
            got = padded(runner, n).padded_size
            assert got == nearest(graphs, n), \
                f"graphs {graphs}: a decode batch of {n} must be padded to {nearest(graphs, n)}, the smallest size >= {n}"


def test_unit_pad_with_the_dummy_request():
    """The padding is runner.dummy_req (the same object), repeated, and nothing else."""
    graphs = rng().choice(GRAPH_LISTS)
    runner = bare_runner(graphs)
    for n in unrecorded_sizes(graphs):
        extra = list(padded(runner, n).padded_reqs)[n:]
        all_dummy = len(extra) == nearest(graphs, n) - n and all(r is runner.dummy_req for r in extra)
        assert all_dummy, (f"graphs {graphs}: a batch of {n} must get {nearest(graphs, n) - n} times "
                           "runner.dummy_req (not copies of real requests)")


def test_unit_real_requests_first_in_order():
    """padded_reqs starts with the batch's own requests (the same objects), in their order; the dummies follow."""
    graphs = rng().choice(GRAPH_LISTS)
    runner = bare_runner(graphs)
    for n in unrecorded_sizes(graphs):
        batch = padded(runner, n)
        head = list(batch.padded_reqs)[:n]
        in_order = len(head) == n and all(a is b for a, b in zip(head, batch.reqs))
        assert in_order, f"graphs {graphs}: padded_reqs[:{n}] must be the batch's own {n} requests, in order"


def test_unit_batch_reqs_left_alone():
    """pad_batch builds a new list: batch.reqs keeps its real requests, batch.size does not change."""
    graphs = rng().choice(GRAPH_LISTS)
    runner = bare_runner(graphs)
    for n in unrecorded_sizes(graphs):
        own = reqs(n)
        batch = Batch(reqs=own, phase="decode")
        kept = list(own)
        runner.pad_batch(batch)
        same = batch.size == n and len(own) == n and all(a is b for a, b in zip(batch.reqs, kept))
        assert same, f"a batch of {n}: batch.reqs must keep its {n} requests (build a new list for padded_reqs)"


def test_unit_no_padding_for_prefill():
    """A prefill batch is never padded, even when a graph would fit it: padded_reqs is just its requests."""
    graphs = rng().choice(GRAPH_LISTS)
    runner = bare_runner(graphs)
    for n in range(1, max(graphs) + 1):
        batch = padded(runner, n, phase="prefill")
        just_reqs = list(batch.padded_reqs) == list(batch.reqs) and batch.padded_size == n
        assert just_reqs, f"graphs {graphs}: a prefill batch of {n} must not be padded"


def test_unit_no_padding_when_no_graph_fits():
    """A decode batch larger than the largest graph (by 1, then more) is not padded, and pad_batch does not raise."""
    graphs = rng().choice(GRAPH_LISTS)
    runner = bare_runner(graphs)
    for n in (max(graphs) + 1, max(graphs) + rng().randint(2, 4)):
        batch = Batch(reqs=reqs(n), phase="decode")
        raised = ""
        try:
            runner.pad_batch(batch)
        except Exception as err:  # noqa: BLE001 - any exception is the failure being reported
            raised = type(err).__name__
        assert raised == "", f"a decode batch of {n} with graphs up to {max(graphs)}: pad_batch raised {raised}"
        just_reqs = list(batch.padded_reqs) == list(batch.reqs) and batch.padded_size == n
        assert just_reqs, f"no graph fits {n} requests: padded_reqs must be the requests themselves"


def test_unit_no_padding_when_graphs_are_off():
    """No graphs at all (graph_bs_list empty, the default on a CPU): pad_batch still runs for every batch, pads
    none and does not raise."""
    runner = bare_runner([])
    for n, phase in ((1, "decode"), (rng().randint(2, 9), "decode"), (rng().randint(2, 9), "prefill")):
        batch = Batch(reqs=reqs(n), phase=phase)
        raised = ""
        try:
            runner.pad_batch(batch)
        except Exception as err:  # noqa: BLE001 - any exception is the failure being reported
            raised = type(err).__name__
        assert raised == "", f"graphs off (graph_bs_list == []): pad_batch raised {raised} on a {phase} batch of {n}"
        just_reqs = list(batch.padded_reqs) == list(batch.reqs) and batch.padded_size == n
        assert just_reqs, f"graphs off: a {phase} batch of {n} must not be padded (padded_reqs is its requests)"


class Logged:
    """Stand-ins for the fixed buffers, the attention backend and the graphs: each call is logged."""

    def __init__(self, log: list, what: str, bs: int = 0):
        self.log, self.what, self.bs = log, what, bs

    def copy_from(self, batch):
        self.log.append(("inputs", batch.padded_size))

    def prepare_for_replay(self, batch):
        self.log.append(("metadata", batch.padded_size))

    def replay(self):
        self.log.append(("replay", self.bs))


VOCAB = 11


def replay_runner(graphs: list):
    """A bare runner whose buffer, backend and graphs log their calls; buffer.logits has distinct rows."""
    runner, log = bare_runner(graphs), []
    runner.buffer = Logged(log, "buffer")
    runner.buffer.logits = torch.arange(max(graphs) * VOCAB, dtype=torch.float32).reshape(max(graphs), VOCAB)
    runner.attn_backend = Logged(log, "backend")
    runner.graph_map = {bs: Logged(log, "graph", bs) for bs in graphs}
    return runner, log


def padded_by_hand(runner, n: int) -> Batch:
    """A decode batch of n requests padded to the nearest graph without the learner's pad_batch."""
    batch = Batch(reqs=reqs(n), phase="decode")
    batch.padded_reqs = list(batch.reqs) + [runner.dummy_req] * (nearest(runner.graph_bs_list, n) - n)
    return batch


def replay_cases() -> list:
    """(graphs, n): a hidden graph list and each decode size that has no graph of its own, then one that has."""
    graphs = rng().choice(GRAPH_LISTS)
    return [(graphs, n) for n in unrecorded_sizes(graphs)] + [(graphs, max(graphs))]


def test_unit_replay_copies_the_inputs_first():
    """Step 1: replay copies the batch's inputs into the fixed buffers (self.buffer.copy_from) before the graph."""
    for graphs, n in replay_cases():
        runner, log = replay_runner(graphs)
        runner.replay(padded_by_hand(runner, n))
        p = nearest(graphs, n)
        before = log[: log.index(("replay", p))] if ("replay", p) in log else log
        assert ("inputs", p) in before, (f"{n} requests padded to {p}: self.buffer.copy_from(batch) must run "
                                         f"before the graph replays; the calls were {log}")


def test_unit_replay_copies_the_metadata_first():
    """Step 2: replay copies the attention metadata (self.attn_backend.prepare_for_replay) before the graph."""
    for graphs, n in replay_cases():
        runner, log = replay_runner(graphs)
        runner.replay(padded_by_hand(runner, n))
        p = nearest(graphs, n)
        before = log[: log.index(("replay", p))] if ("replay", p) in log else log
        assert ("metadata", p) in before, (f"{n} requests padded to {p}: self.attn_backend.prepare_for_replay(batch) "
                                           f"must run before the graph replays; the calls were {log}")


def test_unit_replay_the_graph_of_the_padded_size_once():
    """Step 3: the graph recorded for batch.padded_size replays, once, and no other graph."""
    for graphs, n in replay_cases():
        runner, log = replay_runner(graphs)
        runner.replay(padded_by_hand(runner, n))
        p = nearest(graphs, n)
        replayed = [e for e in log if e[0] == "replay"]
        assert replayed == [("replay", p)], (f"graphs {graphs}, {n} requests padded to {p}: exactly one replay, "
                                             f"of graph_map[{p}]; got {replayed}")


def test_unit_replay_returns_the_first_rows():
    """Step 4: replay returns self.buffer.logits[:batch.size], [batch.size, vocab_size]: the real requests' rows."""
    for graphs, n in replay_cases():
        runner, _ = replay_runner(graphs)
        got = runner.replay(padded_by_hand(runner, n))
        want = runner.buffer.logits[:n]
        is_tensor = isinstance(got, torch.Tensor)
        assert is_tensor, f"replay must return a tensor, not {type(got).__name__}"
        shape = [int(d) for d in got.shape]
        assert shape == [n, VOCAB], f"{n} real requests: replay must return [{n}, vocab_size] rows, got {shape}"
        rows = bool(torch.equal(got, want))
        assert rows, f"replay must return the first {n} rows of self.buffer.logits (those of the real requests)"


@gpu
def test_gpu_real_capture_same_tokens():
    """Real CUDA graphs (torch_static backend): padding 4 -> 5 and replay give the eager tokens."""
    prompts = hidden_prompts(4)
    want = eager_tokens(prompts, 6, device="cuda")
    with engine([2, 3, 5], device="cuda") as llm:
        kinds = sorted({type(g).__name__ for g in llm.engine.graph_runner.graph_map.values()})
        assert kinds == ["CUDAGraph"], "on CUDA the graphs are torch.cuda.CUDAGraph"
        watch = Watch(llm)
        out = llm.generate([list(p) for p in prompts], SamplingParams(max_tokens=6, ignore_eos=True))
    got = [list(o["token_ids"]) for o in out]
    replayed = sorted({(c["size"], c["padded"], tuple(c["graphs"]), c["rows"]) for c in watch.calls})
    assert replayed == [(4, 5, (5,), True)], "4 requests replay graph_map[5] and get back their 4 rows"
    copied = all(all(c["inputs"]) and all(c["metadata"]) for c in watch.calls)
    assert copied, "at some replay the buffers did not hold that step's inputs and metadata"
    assert got == want, "the tokens differ from the run without graphs"

"""Tests for graph-capture-loop: GraphRunner._capture_graphs."""

from judge.testing import PROMPT_IDS, Trace, eager_tokens, engine, engine_device, generate, gpu, run_with_graphs
from minisgl.attention.torch_backend import TorchAttnBackend
from minisgl.core import SamplingParams, get_global_ctx
from minisgl.engine.graph import EmulatedGraph


def recording_capture_order():
    """Patch the backend's prepare_for_capture (not a target here) to record the sizes, in order."""
    sizes, original = [], TorchAttnBackend.prepare_for_capture

    def recording(self, batch):
        sizes.append(batch.size)
        return original(self, batch)

    return sizes, original, recording


def test_example_records_every_size():
    """Graphs [1, 2, 4]: one graph per size, one buffer sized for the largest, the backend's capture
    buffers allocated for the same sizes."""
    with engine([1, 2, 4]) as llm:
        runner, backend = llm.engine.graph_runner, llm.engine.attn_backend
        vocab = llm.engine.model_config.vocab_size
        recorded = sorted(runner.graph_map)
        assert recorded == [1, 2, 4]
        assert runner.buffer is not None, "self.buffer must be set (GraphCaptureBuffer.init)"
        buffer_shapes = (list(runner.buffer.input_ids.shape), list(runner.buffer.logits.shape))
        assert buffer_shapes == ([4], [4, vocab]), "one buffer, sized for the largest batch (max_graph_bs)"
        assert backend.capture is not None, "call attn_backend.init_capture_graph first"
        assert backend.capture_bs == [1, 2, 4]


def test_example_same_tokens_with_graphs():
    """The tiny model with graphs [1, 2, 4]: every decode step replays, and the tokens equal those of the
    run without graphs."""
    got, want, replays, decode_steps = run_with_graphs([1, 2, 4], PROMPT_IDS[:3], 6)
    assert replays == decode_steps > 0, "every decode step must replay a graph"
    assert got == want, "the tokens differ from the run without graphs"


def test_largest_first():
    """The sizes are captured from the largest to the smallest (the first capture sizes the memory pool)."""
    sizes, original, recording = recording_capture_order()
    TorchAttnBackend.prepare_for_capture = recording
    try:
        with engine([1, 2, 4, 8]):
            pass
    finally:
        TorchAttnBackend.prepare_for_capture = original
    assert sizes == [8, 4, 2, 1]


def test_warm_up_before_capture():
    """Each size runs the model eagerly once (the warm-up) before its graph is recorded: on a CPU one
    forward per size during capture, on CUDA two (warm-up, then the recorded one)."""
    import minisgl.models.qwen3 as qwen3

    cls = qwen3.Qwen3ForCausalLM
    forwards, original = [], cls.forward

    def counting(self, *args, **kwargs):
        forwards.append(get_global_ctx().batch.size)
        return original(self, *args, **kwargs)

    cls.forward = counting
    try:
        with engine([1, 2, 4]):
            pass
    finally:
        cls.forward = original
    per_size = 2 if engine_device().startswith("cuda") else 1
    want = [bs for bs in (4, 2, 1) for _ in range(per_size)]
    assert forwards == want, "warm up every size once with model.forward() before recording it"


def test_graphs_read_the_shared_buffers():
    """Each recorded batch is bs dummy requests whose inputs are views of the one shared buffer and whose
    metadata views the backend's capture buffers (checked on the CPU, where graphs are EmulatedGraph)."""
    with engine([1, 2, 4]) as llm:
        runner, backend = llm.engine.graph_runner, llm.engine.attn_backend
        for bs, graph in sorted(runner.graph_map.items()):
            if not isinstance(graph, EmulatedGraph):
                continue  # a real CUDA graph: its batch is not a Python object any more
            batch = graph.batch
            all_dummy = batch.size == bs and all(r is runner.dummy_req for r in batch.padded_reqs)
            assert all_dummy, f"graph {bs}: the captured batch must be {bs} dummy requests"
            shares = batch.input_ids.data_ptr() == runner.buffer.input_ids.data_ptr()
            assert shares, f"graph {bs}: its input_ids must be a view of runner.buffer.input_ids (one shared buffer)"
            metadata_shared = batch.attn_metadata.cache_seqlens.data_ptr() == backend.capture.seq_lens.data_ptr()
            assert metadata_shared, f"graph {bs}: its metadata must view the backend's capture buffers"


def test_every_graph_in_use():
    """5 prompts finishing at different times replay the graphs of 8, 4, 2 and 1 in turn, with the tokens
    of the runs without graphs."""
    prompts = PROMPT_IDS[:5]
    max_tokens = [3, 5, 7, 4, 6]
    want = [eager_tokens([p], n)[0] for p, n in zip(prompts, max_tokens)]
    with engine([1, 2, 4, 8]) as llm:
        trace = Trace(llm)
        out = llm.generate(prompts, [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [o["token_ids"] for o in out]
    padded_sizes = sorted({p for _, p, _ in trace.replays})
    assert padded_sizes == [1, 2, 4, 8]
    assert got == want, "the tokens differ from the runs without graphs"


@gpu
def test_gpu_one_memory_pool():
    """Real CUDA graphs (torch_static backend): all graphs share one memory pool, and the tokens are the
    eager ones."""
    import torch

    want = eager_tokens(PROMPT_IDS[:3], 6, device="cuda")
    with engine([1, 2, 4, 8], device="cuda") as llm:
        graphs = llm.engine.graph_runner.graph_map
        kinds = {type(g).__name__ for g in graphs.values()}
        assert kinds == {"CUDAGraph"}
        pools = {tuple(g.pool()) if isinstance(g.pool(), (tuple, list)) else g.pool() for g in graphs.values()}
        assert len(pools) == 1, "every graph after the first must be captured with pool=pool (one shared pool)"
        got = generate(llm, PROMPT_IDS[:3], 6)
        torch.cuda.synchronize()
    assert got == want, "the tokens differ from the run without graphs"

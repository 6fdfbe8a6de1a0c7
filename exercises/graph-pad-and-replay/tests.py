"""Tests for graph-pad-and-replay: GraphRunner.pad_batch and GraphRunner.replay."""

from judge.testing import PROMPT_IDS, Trace, eager_tokens, engine, generate, gpu, run_with_graphs
from minisgl.core import Batch, Req, SamplingParams


def reqs(n: int) -> list[Req]:
    return [Req(input_ids=[1, 2, 3], table_idx=i, cached_len=2, output_len=4, uid=i) for i in range(n)]


def padded(runner, n: int, phase: str = "decode") -> Batch:
    batch = Batch(reqs=reqs(n), phase=phase)
    runner.pad_batch(batch)
    return batch


def test_example_pad_three_to_four():
    """Graphs [1, 2, 4, 8]: a decode batch of 3 is padded to 4 with the dummy request."""
    with engine([1, 2, 4, 8]) as llm:
        runner = llm.engine.graph_runner
        batch = padded(runner, 3)
        padded_size = batch.padded_size
        assert padded_size == 4
        real_first = batch.padded_reqs[:3] == batch.reqs
        assert real_first, "padded_reqs must start with the batch's own requests, in order"
        assert batch.padded_reqs[3] is runner.dummy_req, "pad with runner.dummy_req"


def test_example_same_tokens_with_graphs():
    """The tiny model with graphs [1, 2, 4]: every decode step replays, and the tokens equal those of the
    run without graphs."""
    got, want, replays, decode_steps = run_with_graphs([1, 2, 4], PROMPT_IDS[:3], 6)
    assert replays == decode_steps > 0, "every decode step must replay a graph"
    assert got == want, "the tokens differ from the run without graphs"


def test_pad_to_the_nearest_size():
    """Each size pads to the smallest recorded size that fits: 1->1, 2->2, 3->4, 4->4, 5..8->8."""
    with engine([1, 2, 4, 8]) as llm:
        runner = llm.engine.graph_runner
        sizes = {n: padded(runner, n).padded_size for n in range(1, 9)}
        want = {1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 6: 8, 7: 8, 8: 8}
        assert sizes == want
        for n in (5, 6, 7):
            batch = padded(runner, n)
            dummies = batch.padded_reqs[n:]
            all_dummy = all(r is runner.dummy_req for r in dummies)
            assert all_dummy, f"a batch of {n} must be padded with runner.dummy_req only"


def test_no_padding_when_no_graph_fits():
    """A batch larger than the largest graph, and any prefill batch, is not padded."""
    with engine([1, 2, 4]) as llm:
        runner = llm.engine.graph_runner
        big = padded(runner, 6)
        assert big.padded_size == 6, "no graph fits 6 requests: padded_reqs must be the requests themselves"
        prefill = padded(runner, 3, phase="prefill")
        assert prefill.padded_size == 3, "prefill batches are never padded"
        same_reqs = prefill.padded_reqs == prefill.reqs
        assert same_reqs


def test_replay_returns_only_the_real_rows():
    """replay returns one row of logits per real request, not per padded request."""
    with engine([1, 2, 4]) as llm:
        runner = llm.engine.graph_runner
        replay, seen = runner.replay, []

        def recording(batch):
            logits = replay(batch)
            seen.append((batch.size, batch.padded_size, tuple(logits.shape)))
            return logits[: batch.size]  # keep the engine going, whatever came back

        runner.replay = recording
        generate(llm, PROMPT_IDS[:3], 4)
        vocab = llm.engine.model_config.vocab_size
    shapes = sorted(set(seen))
    assert shapes == [(3, 4, (3, vocab))], "replay must return logits[:batch.size]: 3 rows for 3 requests padded to 4"


def test_replay_uses_the_graph_of_the_padded_size():
    """replay runs graph_map[batch.padded_size], once per decode step, and no other graph."""
    with engine([1, 2, 4, 8]) as llm:
        runner = llm.engine.graph_runner
        calls = []
        for bs, graph in runner.graph_map.items():
            original_replay = graph.replay

            def counting(bs=bs, original_replay=original_replay):
                calls.append(bs)
                return original_replay()

            graph.replay = counting
        trace = Trace(llm)
        generate(llm, PROMPT_IDS[:5], 4)
    decode_steps = len(trace.decode_steps)
    assert calls == [8] * decode_steps, "5 requests pad to 8: each decode step replays graph_map[8] once"


def test_requests_finishing_at_different_times():
    """5 prompts with different lengths of output on graphs [1, 2, 4, 8]: as requests finish the batch
    shrinks and is padded to 8, 4, 2 and 1 in turn; every token equals the run without graphs."""
    prompts = PROMPT_IDS[:5]
    max_tokens = [3, 5, 7, 4, 6]
    want = [eager_tokens([p], n)[0] for p, n in zip(prompts, max_tokens)]
    with engine([1, 2, 4, 8]) as llm:
        trace = Trace(llm)
        out = llm.generate(prompts, [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
    got = [o["token_ids"] for o in out]
    steps = [(size, padded_size) for size, padded_size, _ in trace.replays]
    assert steps == [(5, 8), (5, 8), (4, 4), (3, 4), (2, 2), (1, 1)]
    assert got == want, "the tokens differ from the runs without graphs"


def test_more_requests_than_the_largest_graph():
    """6 requests with graphs [1, 2, 4]: no graph fits, the engine runs eagerly, the tokens are unchanged."""
    want = eager_tokens(PROMPT_IDS[:6], 3)
    with engine([1, 2, 4]) as llm:
        trace = Trace(llm)
        got = generate(llm, PROMPT_IDS[:6], 3)
    assert trace.replays == [], "no graph can run 6 requests: replay must not be called"
    assert got == want


@gpu
def test_gpu_real_capture_same_tokens():
    """Real CUDA graphs (torch_static backend): padding 3 -> 4 and replay give the eager tokens."""
    want = eager_tokens(PROMPT_IDS[:3], 6, device="cuda")
    with engine([1, 2, 4], device="cuda") as llm:
        trace = Trace(llm)
        got = generate(llm, PROMPT_IDS[:3], 6)
    rows = sorted({(size, padded_size, n) for size, padded_size, n in trace.replays})
    assert rows == [(3, 4, 3)]
    assert got == want, "the tokens differ from the run without graphs"

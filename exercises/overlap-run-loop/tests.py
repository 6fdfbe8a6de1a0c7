"""Tests for overlap-run-loop: Scheduler.run_until_idle, its order of launches, result processing and releases,
with overlap on and off, on the tiny model."""

from contextlib import contextmanager
from types import SimpleNamespace

import torch

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams
from minisgl.env import ENV
from minisgl.scheduler.scheduler import Scheduler

MAX_EVENTS = 2000


def watch(llm) -> list:
    """Record ('launch', k), ('process', k) and ('release', k or None), k numbering the batches from 1."""
    sc = llm.scheduler
    events, launched = [], []  # launched keeps every ForwardInput alive, so identities stay unique

    def number(fwd) -> int:
        return next((k for k, f in enumerate(launched, 1) if f is fwd), 0)

    forward, process, release = sc._forward, sc._process, sc._release_finished

    def log(e):
        if len(events) >= MAX_EVENTS:
            raise RuntimeError(f"more than {MAX_EVENTS} loop events: the loop does not stop")
        events.append(e)

    def traced_forward(fwd):
        launched.append(fwd)
        log(("launch", len(launched), torch.is_inference_mode_enabled()))
        return forward(fwd)

    def traced_process(fwd, out):
        log(("process", number(fwd)))
        return process(fwd, out)

    def traced_release(ongoing):
        log(("release", number(ongoing) if ongoing is not None else None))
        return release(ongoing)

    sc._forward, sc._process, sc._release_finished = traced_forward, traced_process, traced_release
    return events


def run(prompts, max_tokens, overlap, **kw):
    """Generate; (tokens, the loop's events, whether every launch ran in inference mode)."""
    with engine(None, **kw) as llm:
        events = watch(llm)
        ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
        try:
            out = llm.generate([list(p) for p in prompts],
                               [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens])
        finally:
            ENV.DISABLE_OVERLAP_SCHEDULING.value = True
    inference = all(e[2] for e in events if e[0] == "launch")
    return [o["token_ids"] for o in out], squeeze([e[:2] for e in events]), inference


def squeeze(events) -> list:
    """Drop a release(None) right after another: releasing twice with nothing finished in between is harmless."""
    out = []
    for e in events:
        if not (e == ("release", None) and out and out[-1] == e):
            out.append(e)
    return out


def expected_order(n: int, overlap: bool) -> list:
    """The events of n batches launched back to back (computed here from the rules)."""
    out = []
    for k in range(1, n + 1):
        out.append(("launch", k))
        if overlap:
            if k > 1:
                out.append(("process", k - 1))
            out.append(("release", k))
        else:
            out += [("process", k), ("release", None)]
    if overlap:  # the last batch is processed in a step that launches nothing
        out += [("process", n), ("release", None)]
    return out


def launches(events) -> int:
    return sum(e[0] == "launch" for e in events)


# ------------------------------------------------------------------------------------------- examples

def test_example_without_overlap():
    """Overlap off, one prompt and 3 tokens (a prefill and 2 decodes): launch, process, release, three times."""
    tokens, events, inference = run([[5, 6, 7, 8]], [3], overlap=False)
    assert [len(t) for t in tokens] == [3], "3 new tokens (every launched batch's results must be processed)"
    assert events == expected_order(3, False), "(event, batch number) in order"
    assert inference, "the loop runs under torch.inference_mode()"


def test_example_with_overlap():
    """Overlap on: batch k + 1 is launched before batch k's results are processed; the last batch is processed
    after the loop finds nothing more to launch."""
    tokens, events, _ = run([[5, 6, 7, 8]], [3], overlap=True)
    assert [len(t) for t in tokens] == [3], "3 new tokens (every launched batch's results must be processed)"
    assert events == expected_order(3, True), "(event, batch number) in order"


# ------------------------------------------------------------------------------------------- unit-level harness

class Scripted(Scheduler):
    """A Scheduler with no engine: `ready` batches can be scheduled now; `locked` more become schedulable at the
    first release after batch `unlock_after` was processed (finished requests freeing memory), never if
    unlock_after is None. Records (launch, k), (process, k), (release, k or None) like watch()."""

    def __init__(self, ready: int, locked: int = 0, unlock_after=None):
        self.engine = SimpleNamespace(stream=None)
        self.prefill_manager = SimpleNamespace(pending=[])
        self.decode_manager = SimpleNamespace(running={})
        self.t_ready, self.t_locked, self.t_unlock_after = ready, locked, unlock_after
        self.t_scheduled, self.t_processed, self.t_events, self.t_inference = 0, [], [], []

    @property
    def has_work(self) -> bool:
        return bool(self.t_ready or self.t_locked or len(self.t_processed) < self.t_scheduled)

    def _t_log(self, e):
        if len(self.t_events) >= MAX_EVENTS:
            raise RuntimeError(f"more than {MAX_EVENTS} loop events: the loop does not stop")
        self.t_events.append(e)

    def _schedule_next_batch(self):
        if not self.t_ready:
            return None
        self.t_ready -= 1
        self.t_scheduled += 1
        return SimpleNamespace(k=self.t_scheduled)

    def _forward(self, fwd):
        self.t_inference.append(torch.is_inference_mode_enabled())
        self._t_log(("launch", fwd.k))
        return SimpleNamespace(k=fwd.k)

    def _process(self, fwd, out):
        assert out.k == fwd.k, "_process(fwd, out) with the output of that same batch"
        self._t_log(("process", fwd.k))
        self.t_processed.append(fwd.k)

    def _release_finished(self, ongoing):
        self._t_log(("release", ongoing.k if ongoing is not None else None))
        if self.t_locked and self.t_unlock_after in self.t_processed:
            self.t_ready, self.t_locked = self.t_ready + self.t_locked, 0


def loop(sc: Scripted, overlap: bool):
    """Run sc.run_until_idle() in a mode: (events, squeezed; the exception's type name or '')."""
    ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
    try:
        sc.run_until_idle()
        raised = ""
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - which exception is what is checked
        raised = type(e).__name__
    finally:
        ENV.DISABLE_OVERLAP_SCHEDULING.value = True
    return squeeze(sc.t_events), raised


def test_unit_order_without_overlap():
    """Overlap off: launch k, process k, release(None), for every batch; then stop, nothing left."""
    n = rng().randint(1, 6)
    got, raised = loop(Scripted(n), overlap=False)
    assert got == expected_order(n, False), f"{n} batches: (event, batch number) in order"
    assert raised == "", "nothing left: no exception"


def test_unit_order_with_overlap():
    """Overlap on: launch k + 1, then process k, then release(k + 1); the last batch is processed in a step that
    launches nothing, followed by release(None). One batch, then a random number from 2 on."""
    for n in (1, rng().randint(2, 6)):
        got, raised = loop(Scripted(n), overlap=True)
        assert got == expected_order(n, True), f"{n} batches: (event, batch number) in order"
        assert raised == ""


def test_unit_inference_mode():
    """Every launch runs under torch.inference_mode(), in both modes."""
    for overlap in (False, True):
        sc = Scripted(3)
        loop(sc, overlap)
        assert sc.t_inference == [True] * 3, f"overlap={overlap}: inference mode at each launch"


def test_unit_inside_stream_ctx():
    """The loop runs inside stream_ctx(self.engine.stream): every launch happens with the engine's stream current
    (a stand-in CUDA stream class, so that stream_ctx enters torch.cuda.stream(stream) on a CPU too)."""
    current: list = []

    class FakeStream:
        pass

    @contextmanager
    def recording(stream):
        current.append(stream)
        try:
            yield
        finally:
            current.pop()

    saved = {name: vars(torch.cuda).get(name) for name in ("Stream", "stream")}  # the browser's torch has no stream
    torch.cuda.Stream, torch.cuda.stream = FakeStream, recording
    try:
        for overlap in (False, True):
            sc = Scripted(2)
            sc.engine.stream = stream = FakeStream()
            launched_inside = []
            forward = sc._forward
            sc._forward = lambda fwd, forward=forward, stream=stream: (
                launched_inside.append(current == [stream]), forward(fwd))[1]
            loop(sc, overlap)
            assert launched_inside == [True, True], f"overlap={overlap}: launches inside stream_ctx(engine.stream)"
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(torch.cuda, name)
            else:
                setattr(torch.cuda, name, value)


def test_unit_flag_read_once():
    """ENV.DISABLE_OVERLAP_SCHEDULING is read once, at the start: flipping it during the run changes nothing."""
    for overlap in (False, True):
        sc = Scripted(4)
        forward = sc._forward

        def flipping(fwd, forward=forward, overlap=overlap):
            ENV.DISABLE_OVERLAP_SCHEDULING.value = overlap  # the other mode, from the second step on
            return forward(fwd)

        sc._forward = flipping
        got, _ = loop(sc, overlap)
        assert got == expected_order(4, overlap), f"started with overlap={overlap}: the whole run in that mode"


def test_unit_flag_read_at_each_call():
    """"read it once, at the start" of each run_until_idle: two runs on the same scheduler, the flag flipped in
    between: the second run is in the new mode (not the one the first run saw)."""
    n = rng().randint(2, 4)
    for first in (False, True):
        sc = Scripted(3)
        got, _ = loop(sc, first)
        assert got == expected_order(3, first), f"first run, overlap={first}: (event, batch number) in order"
        sc.t_ready, sc.t_scheduled, sc.t_processed, sc.t_events = n, 0, [], []  # n new batches, numbered from 1
        got, _ = loop(sc, not first)
        assert got == expected_order(n, not first), \
            (f"second run on the same scheduler, the flag flipped to overlap={not first}: the flag is read at the "
             "start of each run_until_idle call, not once per scheduler")


def test_unit_keeps_going_after_a_release():
    """Two more batches become schedulable only at the release after batch 2 was processed: the loop goes on and
    runs them (a step that processed something is followed by another), in both modes."""
    for overlap in (False, True):
        sc = Scripted(2, locked=2, unlock_after=2)
        got, raised = loop(sc, overlap)
        assert sc.t_processed == [1, 2, 3, 4], f"overlap={overlap}: the 4 batches, each processed once, in order"
        assert raised == "", f"overlap={overlap}: everything ran: no exception"
        assert got[-1][0] == "release", f"overlap={overlap}: the last step releases"


def test_unit_idle_with_work_left_raises():
    """Batches that can never be scheduled: once idle, the loop raises RuntimeError (after running what it could)."""
    for overlap in (False, True):
        n = rng().randint(1, 3)
        sc = Scripted(n, locked=1, unlock_after=None)
        got, raised = loop(sc, overlap)
        assert sc.t_processed == list(range(1, n + 1)), f"overlap={overlap}: what could run was run and processed"
        assert raised == "RuntimeError", f"overlap={overlap}: work left that can never run: RuntimeError"


def test_unit_nothing_to_do():
    """Nothing to schedule: the loop returns at once (at most a release(None)), in both modes."""
    for overlap in (False, True):
        got, raised = loop(Scripted(0), overlap)
        ran = [e for e in got if e != ("release", None)]
        assert (ran, raised) == ([], ""), f"overlap={overlap}: nothing launched or processed, no exception"


# ------------------------------------------------------------------------------------------- hidden

def test_random_prompts_both_modes():
    """Random prompts: in each mode the events follow the rules, and the tokens are the same in both."""
    r = rng()
    prompts = hidden_prompts(4, 3, 12, r=r)
    max_tokens = [r.randint(2, 9) for _ in prompts]
    results = {}
    for overlap in (False, True):
        tokens, events, inference = run(prompts, max_tokens, overlap)
        n = launches(events)
        assert events == expected_order(n, overlap), f"overlap={overlap}: (event, batch number) in order"
        assert inference, "every batch is launched under torch.inference_mode()"
        results[overlap] = tokens
    assert results[True] == results[False], "the tokens with overlap must equal those without"
    want = expected(lambda: run(prompts, max_tokens, False)[0])
    assert results[False] == want, "the tokens differ from the engine's"


def test_keeps_going_after_a_release():
    """A pool for two requests at a time: the third waits; the loop must not stop while processing results frees
    the memory it waits for. Every request finishes, with both modes giving the engine's order of events."""
    r = rng()
    prompts = [[r.randrange(1, 500) for _ in range(10)] for _ in range(3)]
    for overlap in (False, True):
        tokens, events, _ = run(prompts, [20, 20, 20], overlap, num_page_override=65)
        lengths = [len(t) for t in tokens]
        assert lengths == [20, 20, 20], f"overlap={overlap}: every request runs to its end"
        want = expected(lambda: run(prompts, [20, 20, 20], overlap, num_page_override=65)[1])
        assert events == want, f"overlap={overlap}: (event, batch number) in order"


def test_each_batch_processed_once():
    """With overlap, every batch launched is processed exactly once, in launch order, after the next launch."""
    r = rng()
    prompts = hidden_prompts(6, 3, 10, r=r)
    max_tokens = [r.randint(1, 6) for _ in prompts]
    _, events, _ = run(prompts, max_tokens, True, chunked_prefill_size=r.randint(8, 15))
    processed = [k for e, k in events if e == "process"]
    assert processed == list(range(1, launches(events) + 1)), "batches processed, in order, each once"
    late = [k for e, k in events if e == "process" and k < launches(events)
            and events.index(("process", k)) < events.index(("launch", k + 1))]
    assert late == [], "batches processed before the next one was launched (that is not overlap)"


def test_never_fits_raises():
    """A request that can never be admitted (it needs more pages than the pool has) next to one that fits: the one
    that fits runs to its end, then RuntimeError for the other, not a hang."""
    for overlap in (False, True):
        with engine(None, num_page_override=30) as llm:
            sc = llm.scheduler
            ok = Req(input_ids=[8, 9, 10], table_idx=-1, cached_len=0, output_len=3, uid=76)
            ok.sampling_params = SamplingParams(max_tokens=3, ignore_eos=True)
            sc.add_request(ok)
            sc.add_request(Req(input_ids=[3, 4, 5, 6, 7], table_idx=-1, cached_len=0, output_len=40, uid=77))
            ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
            try:
                sc.run_until_idle()
                raised = ""
            except NotImplementedError:
                raise
            except RuntimeError:
                raised = "RuntimeError"
            finally:
                ENV.DISABLE_OVERLAP_SCHEDULING.value = True
            assert raised == "RuntimeError", f"overlap={overlap}: requests left that can never run must raise"
            done = len(ok.output_ids)
            assert done == 3, f"overlap={overlap}: the request that fits runs to its end before the loop gives up"


def test_nothing_to_do():
    """No request at all: the loop returns at once, launching nothing."""
    with engine(None) as llm:
        events = watch(llm)
        llm.scheduler.run_until_idle()
    ran = [e for e in events if e != ("release", None)]  # a release with nothing finished is harmless
    assert ran == [], "nothing launched or processed (and nothing released but None)"

"""Tests for req-lengths: Req's lengths on requests of random sizes, then the tiny model with this Req."""

from judge.testing import engine, expected, hidden_prompts, rng
from minisgl.core import Req, SamplingParams


def lengths(r: Req) -> tuple:
    """Every length of a request, as plain data."""
    return (r.prompt_len, r.cached_len, r.device_len, r.max_device_len, r.extend_len, r.remain_len,
            r.can_decode, list(r.output_ids), r.matched_len, r.chunked)


def life(prompt: list[int], cached: int, output_len: int, chunks: list[int], tokens: list[int]) -> list[tuple]:
    """A request's whole life: prefilled in chunks (the scheduler sets device_len and chunked), then decoded
    until it cannot; the lengths after every step."""
    r = Req(input_ids=list(prompt), table_idx=3, cached_len=cached, output_len=output_len, uid=11)
    seen = [lengths(r)]
    for n in chunks:  # all chunks but the last: the scheduler's part of chunked prefill
        r.device_len, r.chunked = r.cached_len + n, True
        seen.append(lengths(r))
        r.complete_one()
        seen.append(lengths(r))
    r.device_len, r.chunked = len(prompt), False
    for t in tokens:
        r.complete_one()
        r.input_ids.append(t)
        seen.append(lengths(r))
        if not r.can_decode:
            break
    return seen


def test_example_new_request():
    """A new request of 3 prompt tokens that may generate 4: everything is computed next."""
    r = Req(input_ids=[5, 6, 7], table_idx=0, cached_len=0, output_len=4, uid=1)
    got = (r.prompt_len, r.device_len, r.max_device_len, r.extend_len, r.remain_len)
    assert got == (3, 3, 7, 3, 4), "(prompt_len, device_len, max_device_len, extend_len, remain_len)"
    assert r.can_decode is True
    assert list(r.output_ids) == [], "nothing was generated yet: output_ids is empty"
    flags = (r.matched_len, r.chunked)
    assert flags == (0, False), "a new request has matched_len 0 and is not chunked"


def test_example_prefill_then_three_decodes():
    """After the prefill and three decodes the request has its 4 tokens and cannot decode again."""
    r = Req(input_ids=[5, 6, 7], table_idx=0, cached_len=0, output_len=4, uid=1)
    r.complete_one()
    after_prefill = (r.cached_len, r.device_len, r.extend_len, r.remain_len)
    assert after_prefill == (3, 4, 1, 3), "after the prefill: (cached_len, device_len, extend_len, remain_len)"
    r.input_ids.append(40)
    for t in (41, 42, 43):
        assert r.can_decode, "the request still has tokens to come"
        r.complete_one()
        r.input_ids.append(t)
    end = (r.cached_len, r.device_len, r.remain_len)
    assert end == (6, 7, 0), "after three decodes: (cached_len, device_len, remain_len)"
    assert r.can_decode is False, "remain_len is 0: the request must not decode again"
    assert list(r.output_ids) == [40, 41, 42, 43], "output_ids are the 4 tokens appended after the prompt"


def test_new_requests_of_random_sizes():
    """Requests of random prompt lengths, reused prefixes and output lengths: every length after __init__."""
    g = rng()
    for _ in range(12):
        n = g.randint(2, 40)
        prompt = [g.randrange(1, 500) for _ in range(n)]
        cached, out = g.randint(0, n - 1), g.randint(1, 30)
        r = Req(input_ids=prompt, table_idx=g.randrange(9), cached_len=cached, output_len=out, uid=g.randrange(99))
        assert r.prompt_len == n, "prompt_len is the number of prompt tokens"
        assert r.device_len == n, "device_len starts at len(input_ids): the whole prompt is computed next"
        assert r.max_device_len == n + out, "max_device_len is the prompt length plus output_len"
        assert r.extend_len == n - cached, "extend_len is device_len - cached_len (a reused prefix is not recomputed)"
        assert r.remain_len == out, "remain_len is max_device_len - device_len"
        want = expected(lambda: lengths(Req(input_ids=list(prompt), table_idx=0, cached_len=cached,
                                            output_len=out, uid=0)))
        assert lengths(r) == want, "some length differs from the engine's Req"


def test_new_request_with_a_reused_prefix():
    """__post_init__ reads only input_ids and output_len: with a reused prefix (cached_len > 0) cached_len is kept,
    device_len is still len(input_ids), matched_len 0 and chunked False (fixed corner cases, then random)."""
    g = rng()
    cases = [(2, 1, 1), (9, 8, 3)] + [(n, g.randint(1, n - 1), g.randint(1, 30)) for n in
                                      (g.randint(2, 40) for _ in range(8))]
    for n, cached, out in cases:
        prompt = [g.randrange(1, 500) for _ in range(n)]
        r = Req(input_ids=list(prompt), table_idx=g.randrange(9), cached_len=cached, output_len=out, uid=7)
        assert r.cached_len == cached, "__post_init__ must leave cached_len as given (a reused prefix stays cached)"
        assert (r.prompt_len, r.device_len) == (n, n), \
            "prompt_len and device_len are len(input_ids), even when a prefix was reused"
        assert r.max_device_len == n + out, "max_device_len is the prompt length plus output_len"
        assert r.extend_len == n - cached, "extend_len is device_len - cached_len: a reused prefix is not recomputed"
        assert r.remain_len == out, "remain_len is max_device_len - device_len (not counted from cached_len)"
        assert r.matched_len == 0, "matched_len starts at 0 even with a reused prefix: the prefix cache sets it"
        assert r.chunked is False, "a new request is not chunked"
        assert r.input_ids == prompt, "__post_init__ must not change input_ids"


def test_can_decode_stops_exactly_at_the_last_token():
    """A request decodes while remain_len > 0 and gets exactly output_len tokens: not one more, not one less."""
    g = rng()
    for out in (1, g.randint(2, 6), g.randint(7, 19)):
        r = Req(input_ids=[g.randrange(1, 500) for _ in range(g.randint(2, 9))], table_idx=1, cached_len=0,
                output_len=out, uid=2)
        r.complete_one()  # the prefill gives the first token
        r.input_ids.append(7)
        got = 1
        while r.can_decode and got < out + 5:
            assert r.remain_len > 0, "can_decode is True only while remain_len is positive"
            r.complete_one()
            r.input_ids.append(7)
            got += 1
        assert r.remain_len == 0, "the request stops when remain_len reaches 0"
        assert got == out, f"output_len={out}: the request must get exactly {out} tokens, it got {got}"


def test_can_decode_reads_device_len_not_the_tokens_appended():
    """Under overlap scheduling a sampled token reaches input_ids a step after complete_one: can_decode and
    remain_len read device_len, never how many tokens were appended (output_len 1 and 2 first, then random)."""
    g = rng()
    for out in (1, 2, g.randint(3, 9)):
        n = g.randint(2, 9)
        r = Req(input_ids=[g.randrange(1, 500) for _ in range(n)], table_idx=1, cached_len=0, output_len=out, uid=5)
        forwards = 0
        while r.can_decode and forwards < out + 3:
            r.complete_one()  # the forward ran; its token is still on the device
            forwards += 1
            left = out - forwards
            assert r.remain_len == left, \
                f"after {forwards} forwards of {out}, remain_len is {left}, the token not yet in input_ids included"
            assert r.can_decode is (left > 0), \
                f"after {forwards} forwards of {out} can_decode is {left > 0}: it reads remain_len, not input_ids"
            if forwards > 1:
                r.input_ids.append(7)  # the previous step's token arrives one step late
        assert forwards == out, f"output_len={out}: exactly {out} forwards, not {forwards}"


def test_output_ids_is_a_new_list():
    """output_ids is a list (not an iterator or a tuple), and a new one: changing it leaves input_ids alone."""
    g = rng()
    prompt = [g.randrange(1, 500) for _ in range(g.randint(3, 9))]
    new = [g.randrange(1, 500) for _ in range(g.randint(2, 5))]
    r = Req(input_ids=list(prompt), table_idx=0, cached_len=0, output_len=9, uid=6)
    r.input_ids.extend(new)
    out = r.output_ids
    assert type(out).__name__ == "list", "output_ids must be a list, as the engine returns it"
    assert out == new, "output_ids are the tokens after the prompt"
    out.append(1)
    assert list(r.input_ids) == prompt + new, "output_ids must be a new list: appending to it changed input_ids"


def test_chunked_prefill_moves_only_cached_len():
    """A chunk of a long prompt: complete_one caches the chunk and does not advance device_len."""
    g = rng()
    n = g.randint(20, 40)
    r = Req(input_ids=[g.randrange(1, 500) for _ in range(n)], table_idx=2, cached_len=0, output_len=5, uid=3)
    chunk = g.randint(3, 9)
    r.device_len, r.chunked = chunk, True
    assert r.extend_len == chunk, "a chunk computes device_len - cached_len tokens"
    r.complete_one()
    got = (r.cached_len, r.device_len)
    assert got == (chunk, chunk), "a chunked request's sampled token is dropped: device_len must not grow"
    assert r.chunked is True, "complete_one moves only cached_len: chunked is the scheduler's to clear"
    assert r.prompt_len == n, "prompt_len never changes"
    r.device_len, r.chunked = n, False  # the last chunk
    r.complete_one()
    got = (r.cached_len, r.device_len)
    assert got == (n, n + 1), "after the last chunk the request is complete: device_len grows by one"


def test_whole_lives_match_the_engine():
    """Random lives (reused prefix, chunks, decodes): the lengths after every step equal the engine's Req."""
    g = rng()
    for _ in range(4):
        n = g.randint(12, 30)
        prompt = [g.randrange(1, 500) for _ in range(n)]
        cached = g.randint(0, 3)
        chunks = [g.randint(2, 4) for _ in range(g.randint(0, 2))]
        tokens = [g.randrange(1, 500) for _ in range(g.randint(3, 12))]
        out = g.randint(2, 14)
        got = life(prompt, cached, out, chunks, tokens)
        assert got == expected(life, prompt, cached, out, chunks, tokens), \
            "the lengths after some step differ from the engine's Req (prefix reused, chunks, decodes)"


def test_output_ids_are_the_generated_tokens():
    """output_ids is what came after the prompt, whatever the prompt's length."""
    g = rng()
    prompt = [g.randrange(1, 500) for _ in range(g.randint(3, 15))]
    new = [g.randrange(1, 500) for _ in range(g.randint(2, 7))]
    r = Req(input_ids=list(prompt), table_idx=0, cached_len=0, output_len=20, uid=4)
    r.input_ids.extend(new)
    assert list(r.output_ids) == new, "output_ids are the tokens after the prompt (not the prompt itself)"


def run_engine(prompts: list[list[int]], max_tokens: list[int]) -> dict:
    """The tiny model with chunked prefill (budget 5), twice (the second run reuses cached prefixes): the
    tokens of each run ("first", "second"), and ("steps") the phase and number of tokens of every forward."""
    with engine(None, chunked_prefill_size=5) as llm:
        steps: list[tuple[str, int]] = []
        forward = llm.engine.forward_batch

        def traced(batch):
            steps.append((batch.phase, int(batch.input_ids.shape[0])))
            return forward(batch)

        llm.engine.forward_batch = traced
        params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in max_tokens]
        first = [list(o["token_ids"]) for o in llm.generate(prompts, params)]
        second = [list(o["token_ids"]) for o in llm.generate(prompts, params)]
    return {"first": first, "second": second, "steps": steps}


_ENGINE_RUNS: dict = {}


def engine_part(prompts: list[list[int]], max_tokens: list[int], part: str) -> list:
    """One part of the engine's own run (used only as an expected value; the run is made once)."""
    key = (tuple(map(tuple, prompts)), tuple(max_tokens))
    if key not in _ENGINE_RUNS:
        _ENGINE_RUNS[key] = run_engine(prompts, max_tokens)
    return _ENGINE_RUNS[key][part]


def test_engine_chunked_prefill_and_prefix_reuse():
    """The tiny model with your Req: chunked prefill and a reused prefix give the engine's tokens and the same
    forwards (how many tokens each computed)."""
    g = rng()
    prompts = hidden_prompts(3, min_len=6, max_len=13)
    max_tokens = [g.randint(2, 6), g.randint(7, 9), g.randint(3, 8)]
    got = run_engine(prompts, max_tokens)
    counts = [len(t) for t in got["first"]]
    assert counts == max_tokens, "each request must get exactly max_tokens tokens"
    assert got["steps"] == expected(engine_part, prompts, max_tokens, "steps"), \
        "the forwards differ from the engine's: (phase, tokens computed) of each batch"
    assert got["first"] == expected(engine_part, prompts, max_tokens, "first"), "the tokens differ from the engine's"
    assert got["second"] == expected(engine_part, prompts, max_tokens, "second"), \
        "the tokens of the second run (prefixes reused) differ from the engine's"

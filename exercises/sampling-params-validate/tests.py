"""Tests for sampling-params-validate: the ranges of validate, is_greedy, and LLM.generate refusing bad input."""

from judge.testing import engine, expected, generate, hidden_prompts, rng
from minisgl.core import SamplingParams

FIELDS = ("max_tokens", "temperature", "top_k", "top_p")


def refusal(params: SamplingParams) -> str | None:
    """The message of the ValueError that validate raised, or None if it accepted the parameters."""
    try:
        result = params.validate()
    except ValueError as e:
        return str(e)
    assert result is None, "validate returns None for good parameters"
    return None


def check_refused(field: str, value) -> None:
    message = refusal(SamplingParams(**{field: value}))
    assert message is not None, f"{field}={value!r} is out of range: validate must raise ValueError"
    assert field in message, f"the message must name the field {field!r}; it was: {message!r}"
    assert str(value) in message or repr(value) in message, \
        f"the message must show the value given ({value!r}); it was: {message!r}"


def check_accepted(**kw) -> None:
    message = refusal(SamplingParams(**kw))
    assert message is None, f"SamplingParams({kw}) is valid, but validate raised: {message}"


def test_example_defaults_and_one_bad_value():
    """The defaults are valid (greedy); top_p=0 and max_tokens=0 are refused with a message naming the field."""
    check_accepted()
    assert SamplingParams().is_greedy is True, "temperature 0 (the default) is greedy"
    check_refused("top_p", 0.0)
    check_refused("max_tokens", 0)


def test_example_is_greedy():
    """Greedy when temperature is 0 or top_k is 1; sampled otherwise."""
    assert SamplingParams(temperature=0.7, top_k=1).is_greedy is True, "top_k=1 leaves one candidate: greedy"
    assert SamplingParams(temperature=0.7).is_greedy is False, "temperature 0.7 without top_k=1 samples"


def test_max_tokens_range():
    """max_tokens must be an int of at least 1: 0, negatives and floats are refused."""
    g = rng()
    check_refused("max_tokens", 0)
    check_refused("max_tokens", -1)
    check_refused("max_tokens", -g.randint(2, 50))
    check_refused("max_tokens", g.randint(2, 9) + 0.5)


def test_max_tokens_whole_floats_are_refused():
    """A float is not an int even when it is whole: 3.0 and 1.0 are refused, like 2.5 (they would make every
    length a float)."""
    g = rng()
    check_refused("max_tokens", 3.0)
    check_refused("max_tokens", 1.0)
    check_refused("max_tokens", float(g.randint(4, 64)))
    check_refused("max_tokens", 0.0)
    check_accepted(max_tokens=1)
    check_accepted(max_tokens=g.randint(2, 500))


def test_temperature_range():
    """temperature may be 0 (greedy) or positive; negative is refused."""
    g = rng()
    check_refused("temperature", -0.01)
    check_refused("temperature", -round(g.uniform(0.02, 3.0), 3))
    check_accepted(temperature=0.0)
    check_accepted(temperature=round(g.uniform(0.05, 3.0), 3))


def test_top_k_range():
    """top_k is -1 (off) or at least 1: 0 and values below -1 are refused."""
    g = rng()
    check_refused("top_k", 0)
    check_refused("top_k", -2)
    check_refused("top_k", -g.randint(3, 40))
    check_accepted(top_k=-1, temperature=0.9)
    check_accepted(top_k=1, temperature=0.9)
    check_accepted(top_k=g.randint(2, 300), temperature=0.9)


def test_top_p_range():
    """top_p is in (0, 1]: 0, negatives and values above 1 are refused; 1 and small positives are fine."""
    g = rng()
    check_refused("top_p", 0.0)
    check_refused("top_p", -round(g.uniform(0.01, 1.0), 3))
    check_refused("top_p", 1.01)
    check_refused("top_p", round(1.0 + g.uniform(0.02, 2.0), 3))
    check_accepted(top_p=1.0, temperature=0.9)
    check_accepted(top_p=round(g.uniform(0.001, 0.999), 3), temperature=0.9)


def test_is_greedy_cases():
    """is_greedy is True when temperature == 0 (whatever top_k and top_p) or top_k == 1 (whatever the temperature),
    False otherwise; a bool either way."""
    g = rng()
    for top_k in (-1, 1, g.randint(2, 80)):
        p = SamplingParams(temperature=0.0, top_k=top_k, top_p=round(g.uniform(0.05, 1.0), 2))
        assert p.is_greedy is True, f"temperature 0 is greedy (top_k={top_k})"
    for temperature in (1e-9, 1e-6, 0.01, round(g.uniform(0.1, 2.0), 2)):
        assert SamplingParams(temperature=temperature, top_k=1).is_greedy is True, \
            f"top_k=1 leaves one candidate: greedy at temperature {temperature}"
        for top_k in (-1, 2, g.randint(3, 80)):
            p = SamplingParams(temperature=temperature, top_k=top_k)
            assert p.is_greedy is False, f"temperature {temperature}, top_k {top_k}: not greedy"


def test_large_values_are_accepted():
    """The ranges have no upper end: a large max_tokens, temperature or top_k is fine."""
    g = rng()
    check_accepted(max_tokens=100_000 + g.randint(1, 10**6))
    check_accepted(temperature=round(g.uniform(3.5, 50.0), 2))
    check_accepted(temperature=1000.0)
    check_accepted(top_k=10**6 + g.randint(1, 1000), temperature=0.9)


def test_top_p_near_its_edges():
    """top_p just above 1 is refused, and any top_p greater than 0 is fine, however small (no rounding, no
    epsilon)."""
    g = rng()
    check_refused("top_p", 1.001)
    check_refused("top_p", 1.0001)
    check_refused("top_p", round(1.0 + g.uniform(0.0002, 0.004), 4))
    check_accepted(top_p=1e-9, temperature=0.9)
    check_accepted(top_p=0.001, temperature=0.9)
    check_accepted(top_p=round(g.uniform(0.0001, 0.004), 4), temperature=0.9)


def verdict(p: SamplingParams) -> tuple:
    """(accepted, is_greedy if accepted)."""
    accepted = refusal(p) is None
    return accepted, (p.is_greedy if accepted else None)


def test_random_parameters_like_the_engine():
    """Random combinations: validate accepts or refuses exactly as the engine's does, and is_greedy agrees on
    the accepted ones."""
    g = rng()
    for _ in range(40):
        kw = dict(max_tokens=g.choice([0, 1, g.randint(2, 64), -3]),
                  temperature=g.choice([0.0, round(g.uniform(0.1, 2.0), 2), -0.5]),
                  top_k=g.choice([-1, 0, 1, g.randint(2, 80), -7]),
                  top_p=g.choice([1.0, round(g.uniform(0.05, 0.95), 2), 0.0, 1.5]))
        got = verdict(SamplingParams(**kw))
        want = expected(lambda: verdict(SamplingParams(**kw)))
        assert got == want, f"SamplingParams({kw}): (accepted, is_greedy) differs from the engine's"


def test_generate_refuses_a_bad_prompt_and_keeps_working():
    """LLM.generate with one bad SamplingParams among good ones raises ValueError naming the field; the
    engine then answers the next call exactly like the engine's own code."""
    g = rng()
    prompts = hidden_prompts(3, min_len=3, max_len=9)
    bad_field = g.choice(["top_p", "top_k", "temperature"])
    bad_value = {"top_p": 0.0, "top_k": 0, "temperature": -1.5}[bad_field]
    with engine() as llm:
        params = [SamplingParams(max_tokens=3, ignore_eos=True) for _ in prompts]
        params[g.randrange(3)] = SamplingParams(max_tokens=3, ignore_eos=True, **{bad_field: bad_value})
        try:
            llm.generate(prompts, params)
            message = None
        except ValueError as e:
            message = str(e)
        assert message is not None, f"generate must refuse {bad_field}={bad_value!r} with a ValueError"
        assert bad_field in message, f"the error must name {bad_field!r}; it was: {message!r}"
        queued = llm.scheduler.has_work
        assert queued is False, "a refused call must queue nothing (every prompt is checked before any is queued)"
        got = generate(llm, prompts, 4)

    def engine_tokens():
        with engine() as ref:
            return generate(ref, prompts, 4)

    assert got == expected(engine_tokens), "after the refused call the engine must answer as if it never happened"

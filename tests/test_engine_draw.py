"""judge.testing.engine(): the hidden end-to-end tests run on an engine configuration drawn from the judging's seed
(overlap, page size, chunked prefill, tied LM head, small pool, padded CUDA graphs), the same in every process of
the judging, shown in a failed test's message with the seed that draws it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge import testing
from judge.exercise import load_exercise
from judge.isolation import Judging, judge_isolated

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def run_state():
    yield testing.RUN
    testing.RUN.reset()


def draws(test: str, seeds) -> list[testing.EngineDraw]:
    out = []
    for s in seeds:
        testing.RUN.seed, testing.RUN.test = s, test
        out.append(testing.draw_engine())
    return out


def test_every_dimension_is_drawn_both_ways_and_the_draw_is_stable(run_state):
    got = draws("test_engine_tokens", range(300))
    assert {d.overlap for d in got} == {True, False}
    assert {d.page_size for d in got} == {1, 2, 4}
    assert {d.chunked_prefill_size is None for d in got} == {True, False}
    assert {d.tied for d in got} == {True, False}
    assert {d.num_pages is None for d in got} == {True, False}
    assert {d.graph_bs is None for d in got} == {True, False}
    assert len(set(got)) > 100, "the draws vary with the seed"
    assert draws("test_engine_tokens", range(300)) == got, "the same seed and test draw the same configuration"
    for d in got:  # a small pool still holds the largest request (max_seq_len 64) and the dummy page
        assert d.num_pages is None or d.num_pages * d.page_size >= 64 + d.page_size


def test_unit_tests_and_examples_get_the_defaults(run_state):
    default = testing.EngineDraw(False, 1, None, False, None, None)
    for name in ("test_random_prefills", "test_example_engine_admits_in_waves", "test_example_decode"):
        assert set(draws(name, range(50))) == {default}, name


def test_the_engine_is_built_as_drawn(run_state):
    from minisgl.env import ENV

    seeds = [s for s, d in zip(range(400), draws("test_engine_x", range(400)))
             if d.graph_bs and d.tied and d.num_pages and d.chunked_prefill_size and d.page_size > 1 and d.overlap]
    testing.RUN.seed, testing.RUN.test = seeds[0], "test_engine_x"
    d = testing.draw_engine()
    before = ENV.DISABLE_OVERLAP_SCHEDULING.value
    with testing.engine() as llm:
        eng = llm.engine
        assert ENV.DISABLE_OVERLAP_SCHEDULING.value is False
        assert (eng.page_size, eng.num_pages) == (d.page_size, d.num_pages)
        assert eng.config.chunked_prefill_size == d.chunked_prefill_size
        assert eng.model_config.tie_word_embeddings if hasattr(eng.model_config, "tie_word_embeddings") else \
            "tied" in str(eng.config.model_path)
        assert eng.graph_runner.graph_bs_list == list(d.graph_bs)
        assert testing.RUN.drawn == d
        tokens = testing.generate(llm, testing.PROMPT_IDS[:5], 6)
    assert ENV.DISABLE_OVERLAP_SCHEDULING.value == before, "the flag is put back"
    # what the test gives is kept
    with testing.engine(None, page_size=1, overlap=False, tied=False, num_page_override=256) as llm:
        eng = llm.engine
        assert (eng.page_size, eng.num_pages, ENV.DISABLE_OVERLAP_SCHEDULING.value) == (1, 256, True)
        assert "untied" in str(eng.config.model_path) and eng.graph_runner.graph_bs_list == []
    with testing.engine(None, tied=True) as llm:
        assert testing.generate(llm, testing.PROMPT_IDS[:5], 6) == tokens, "the drawn engine gives the tokens " \
                                                                           "of the plain one on the same model"


TOKENS_TEST = '''
from judge.testing import engine, expected, generate, hidden_prompts


def run(prompts):
    with engine() as llm:
        return generate(llm, prompts, 20)


def test_engine_tokens():
    """The engine's tokens."""
    prompts = hidden_prompts(6, min_len=8, max_len=14)
    assert run(prompts) == expected(run, prompts), "the tokens differ from the engine's"
'''


def test_a_mistake_that_shows_only_in_a_small_pool_fails_the_end_to_end_test_when_one_is_drawn(run_state, tmp_path):
    """scheduler-admission's no_reservation (admits without counting the pages promised to admitted requests),
    judged by a plain end-to-end test: it passes with the default pool (256 pages) and fails where a small pool is
    drawn; the failure's message names the draw and the seed that draws it again."""
    import shutil

    shutil.copytree(ROOT / "exercises" / "scheduler-admission", tmp_path / "scheduler-admission")
    shutil.copy(ROOT / "exercises" / "chapters.toml", tmp_path / "chapters.toml")
    (tmp_path / "scheduler-admission" / "tests.py").write_text(TOKENS_TEST)
    e = load_exercise(tmp_path / "scheduler-admission")
    wrong = (e.path / "mutants" / "no_reservation.py").read_text()
    seeds: dict[bool, list[int]] = {True: [], False: []}
    for s in range(1000):
        testing.RUN.seed, testing.RUN.test = s, "test_engine_tokens"
        seeds[testing.draw_engine().num_pages is not None].append(s)
    chosen = seeds[False][:2] + seeds[True][:2]
    outcomes = judge_isolated([Judging(e, wrong, "submission.py", "local", seed=s) for s in chosen])
    got = [o.verdict.tests[0] for o in outcomes]
    assert [t.status for t in got[:2]] == ["pass", "pass"], [t.message for t in got[:2]]
    assert all(t.status in ("fail", "error") for t in got[2:]), "a small pool drawn: the mistake shows"
    for s, t in zip(chosen[2:], got[2:]):
        assert "KV pages" in t.message and f"--seed {s} draws it again" in t.message, t.message

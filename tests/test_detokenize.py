"""IncrementalDetokenizer on SmolLM2's byte-level BPE: each guarantee of its docstring, on seeded random streams
(multi-byte characters split across tokens, random ids, special tokens, streams cut mid-character) and on named
corner cases."""

from __future__ import annotations

import random

import pytest

from minisgl import testing
from minisgl.tokenizer.detokenize import REPLACEMENT, IncrementalDetokenizer
from tests.support import need

# text whose characters take 2 to 4 UTF-8 bytes, which SmolLM2 often splits across tokens
MULTIBYTE = [
    "你好，世界！今天天气很好。",
    "日本語のテキストです",
    "😀🎉 👨‍👩‍👧 🇫🇷 🙂",
    "café naïve façade Ωμέγα ß ẞ",
    "Привет, мир",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
    "x→y ≤ z ∀ε>0",
    "a literal \ufffd replacement character",
]
ASCII = ["The capital of France is Paris.", "def f(x):\n    return x ** 2\n", "  spaces\tand\nnewlines  "]
SPECIAL_IDS = list(range(17))  # SmolLM2's added tokens: <|endoftext|>, <|im_start|>, <|im_end|>, <repo_name>, ...
EOS = 2
SENTENCE = "The capital of France is Paris."  # The| capital| of| France| is| Paris|.


@pytest.fixture(scope="module")
def tok():
    try:
        path = testing.smollm2_path()
    except FileNotFoundError as exc:
        need(False, f"the detokenizer is tested with SmolLM2's tokenizer: {exc}")
    from transformers import PreTrainedTokenizerFast

    # the class AutoTokenizer picks for SmolLM2 (TokenizersBackend), without AutoConfig's imports (~5 s on 2 cores)
    return PreTrainedTokenizerFast.from_pretrained(path)


def encode(tok, text: str) -> list[int]:
    return list(tok.encode(text))


def stream(tok, ids: list[int], sizes: list[int] | None = None, stop: tuple[str, ...] = (), skip: bool = True,
           expected: str | None = None) -> tuple[IncrementalDetokenizer, list[str]]:
    """Feed `ids` in groups of `sizes` (default: one token at a time); check at every step that `text` only grows,
    as a prefix of `expected` (default: the full decode), and that the chunks add up to it at the end."""
    expected = tok.decode(ids, skip_special_tokens=skip) if expected is None else expected
    det = IncrementalDetokenizer(tok, stop=stop, skip_special_tokens=skip)
    chunks, at = [], 0
    for size in sizes or [1] * len(ids):
        chunks.append(det.add(ids[at : at + size]))
        at += size
        assert det.text == "".join(chunks) and expected.startswith(det.text), (ids, chunks)  # guarantee 2
    assert at == len(ids)
    chunks.append(det.finish())
    assert "".join(chunks) == det.text == expected, (ids, chunks)  # guarantees 1 and 3
    return det, chunks


def random_stream(tok, rng: random.Random) -> list[int]:
    """One of four kinds: multi-byte texts concatenated, the ids of one shuffled, random ids, texts with special
    tokens inserted; cut at a random length half of the time (often mid-character)."""
    kind = rng.randrange(4)
    texts = [encode(tok, t) for t in rng.sample(MULTIBYTE + ASCII, rng.randint(1, 3))]
    if kind == 0:
        ids = [i for t in texts for i in t]
    elif kind == 1:
        ids = texts[0][:]
        rng.shuffle(ids)
    elif kind == 2:
        ids = [rng.randrange(len(tok)) for _ in range(rng.randint(1, 30))]
    else:
        ids = [i for t in texts for i in t]
        for _ in range(rng.randint(1, 4)):
            ids.insert(rng.randint(0, len(ids)), rng.choice(SPECIAL_IDS))
    return ids[: rng.randint(0, len(ids))] if rng.random() < 0.5 else ids


def random_sizes(rng: random.Random, n: int) -> list[int]:
    sizes = []
    while sum(sizes) < n:
        sizes.append(min(rng.randint(1, 5), n - sum(sizes)))
    return sizes


def test_random_streams_decode_exactly_and_never_retract(tok):
    naive_differs = flushed_at_finish = 0
    for seed in range(400):
        rng = random.Random(seed)
        ids = random_stream(tok, rng)
        skip = rng.random() < 0.5
        det, chunks = stream(tok, ids, random_sizes(rng, len(ids)) if seed % 3 == 0 else None, skip=skip)
        assert not det.stopped and det.stop_reason is None
        full = tok.decode(ids, skip_special_tokens=skip)
        naive_differs += "".join(tok.decode([i], skip_special_tokens=skip) for i in ids) != full
        flushed_at_finish += chunks[-1] != ""
    # the data exercises what a naive detokenizer gets wrong: characters split across tokens, unfinished ends
    assert naive_differs > 150 and flushed_at_finish > 50, (naive_differs, flushed_at_finish)


def test_naive_per_token_decode_breaks_the_multibyte_corpus(tok):
    for text in MULTIBYTE[:7]:
        ids = encode(tok, text)
        assert tok.decode(ids) == text
        naive = "".join(tok.decode([i]) for i in ids)
        assert naive != text and REPLACEMENT in naive, text  # some character's bytes span several tokens
        stream(tok, ids)


def test_random_stop_strings_cut_before_the_earliest_occurrence(tok):
    stopped = 0
    for seed in range(150):
        rng = random.Random(1000 + seed)
        ids = random_stream(tok, rng)
        full = tok.decode(ids, skip_special_tokens=True)
        stops = []
        for _ in range(rng.randint(1, 3)):
            if full and rng.random() < 0.7:  # a piece of the text, often spanning tokens; else maybe absent
                at = rng.randrange(len(full))
                stops.append(full[at : at + rng.randint(1, 6)])
            else:
                stops.append(rng.choice(MULTIBYTE + ASCII)[: rng.randint(1, 6)])
        hits = sorted((at, len(s), s) for s in stops if (at := full.find(s)) >= 0)
        expected = full[: hits[0][0]] if hits else full
        det, _ = stream(tok, ids, random_sizes(rng, len(ids)) if seed % 2 else None, tuple(stops), expected=expected)
        assert det.stopped == bool(hits) and det.stop_reason == (hits[0][2] if hits else None), (ids, stops)
        stopped += det.stopped
    assert stopped > 75


def test_emoji_bytes_spanning_three_tokens(tok):
    ids = encode(tok, "😀")
    assert len(ids) == 3 and all(tok.decode([i]) == REPLACEMENT for i in ids)
    _, chunks = stream(tok, ids)
    assert chunks == ["", "", "😀", ""]


def test_stream_ending_mid_character_is_flushed_at_finish(tok):
    ids = encode(tok, "a😀")[:-1]
    _, chunks = stream(tok, ids)
    assert chunks == ["a", "", "", REPLACEMENT]  # the window never shows it; finish() returns the full decode's


@pytest.mark.parametrize("skip, text", [(True, "Hi there"), (False, "Hi<|im_end|> there")])
def test_eos_token(tok, skip, text):
    ids = encode(tok, "Hi") + [EOS] + encode(tok, " there")
    _, chunks = stream(tok, ids, skip=skip)
    assert "".join(chunks) == text


@pytest.mark.parametrize("skip, text", [(True, "😀"), (False, f"{REPLACEMENT}<|im_end|>{REPLACEMENT}")])
def test_eos_inside_a_split_character(tok, skip, text):
    emoji = encode(tok, "😀")
    _, chunks = stream(tok, emoji[:2] + [EOS] + emoji[2:], skip=skip)
    assert "".join(chunks) == text


def test_empty_stream(tok):
    det = IncrementalDetokenizer(tok)
    assert det.finish() == "" and det.text == "" and not det.stopped


def test_stop_string_inside_one_token(tok):
    ids = encode(tok, SENTENCE)
    det, chunks = stream(tok, ids, stop=("ari",), expected="The capital of France is P")
    assert det.stopped and det.stop_reason == "ari"
    assert chunks[-2:] == ["", ""]  # after the stop, add() and finish() return ""


def test_stop_string_split_across_tokens_is_never_partly_emitted(tok):
    ids = encode(tok, SENTENCE)
    det, chunks = stream(tok, ids, stop=("is Par",), expected="The capital of France ")
    assert chunks == ["The", " capital", " of", " France", " ", "", "", ""]  # "is" is held, then dropped
    assert det.stop_reason == "is Par"


def test_stop_string_split_inside_a_character(tok):
    ids = encode(tok, "ok 😀 no")
    det, _ = stream(tok, ids, stop=("😀",), expected="ok ")
    assert det.stop_reason == "😀"


def test_earliest_stop_string_wins_over_the_first_listed(tok):
    ids = encode(tok, SENTENCE)
    det, _ = stream(tok, ids, stop=("Paris", "France"), expected="The capital of ")
    assert det.stop_reason == "France"


def test_overlapping_stop_strings_wait_for_the_earlier_start(tok):
    # "is" completes first, but "France is" starts earlier: the cut is the full decode's earliest occurrence
    ids = encode(tok, SENTENCE)
    det, _ = stream(tok, ids, stop=("is", "France is"), expected="The capital of ")
    assert det.stop_reason == "France is"


def test_prefix_of_a_stop_string_ending_the_stream_is_emitted_at_finish(tok):
    ids = encode(tok, "The capital of France is")
    det, chunks = stream(tok, ids, stop=(" is Paris",))
    assert chunks[-2:] == ["", " is"] and not det.stopped and det.stop_reason is None


def test_stop_must_be_non_empty_strings(tok):
    for stop in ("abc", ("",), ["ok", ""]):
        with pytest.raises(ValueError):
            IncrementalDetokenizer(tok, stop=stop)


class CountingTokenizer:
    """A tokenizer that records how many ids each decode() gets."""

    def __init__(self, tok) -> None:
        self.tok, self.lengths = tok, []

    def decode(self, ids, **kwargs) -> str:
        self.lengths.append(len(ids))
        return self.tok.decode(ids, **kwargs)


def test_add_decodes_a_bounded_window(tok):
    ids = [i for _ in range(20) for text in MULTIBYTE[:7] + ASCII for i in encode(tok, text)]
    counting = CountingTokenizer(tok)
    det = IncrementalDetokenizer(counting)
    out = "".join(det.add([i]) for i in ids)
    assert max(counting.lengths) <= 8 < len(ids)  # never the whole stream, whatever its length
    counting.lengths.clear()
    assert out + det.finish() == tok.decode(ids)
    assert counting.lengths == [len(ids)]  # finish() decodes the whole stream, once

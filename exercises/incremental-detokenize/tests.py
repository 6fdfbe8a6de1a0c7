"""Tests for incremental-detokenize: IncrementalDetokenizer.add and finish with the tiny models' byte-level BPE
tokenizer (and a SentencePiece-like wrapper of it), fixed streams first, then random streams compared with the
engine's chunks and offsets."""

from functools import lru_cache

from transformers import PreTrainedTokenizerFast  # at the top: the warm judge imports it once, before any judging

from judge.testing import expected, rng
from minisgl.testing import tiny_model_name, tiny_models_dir
from minisgl.tokenizer.detokenize import REPLACEMENT, IncrementalDetokenizer

SPECIAL = [0, 1, 2]  # <|endoftext|>, <|im_start|>, <|im_end|>
TEXTS = ["the quiet river runs blue", "café naïve façade", "你好，世界", "a😀b 🎉 ok", "Ωμέγα ß → ≤ ∀", "Привет, мир",
         "pages of the cache", "seven kernels decode a batch", "𝔘𝔫𝔦 𝟙𝟚", "x = [1, 2]\n  y"]


@lru_cache(maxsize=1)
def tok():
    return PreTrainedTokenizerFast.from_pretrained(str(tiny_models_dir() / tiny_model_name()))


class SentencePieceLike:
    """Decodes like the tiny tokenizer, but drops the leading space of what it is given (as SentencePiece does)."""

    def __init__(self) -> None:
        self.inner = tok()

    def decode(self, ids, **kw) -> str:
        text = self.inner.decode(list(ids), **kw)
        return text[1:] if text.startswith(" ") else text


class Counting:
    """Records how many ids each decode gets."""

    def __init__(self, inner) -> None:
        self.inner, self.lengths = inner, []

    def decode(self, ids, **kw) -> str:
        self.lengths.append(len(ids))
        return self.inner.decode(ids, **kw)


def encode(text: str) -> list[int]:
    return list(tok().encode(text))


def make(kind: str, stop=(), skip=True):
    return IncrementalDetokenizer(SentencePieceLike() if kind == "sp" else tok(), stop, skip)


def full_decode(kind: str, ids, skip=True) -> str:
    return (SentencePieceLike() if kind == "sp" else tok()).decode(list(ids), skip_special_tokens=skip)


def stream(ids, sizes=None, stop=(), skip=True, kind="bpe"):
    """Feed ids in groups of sizes (default one at a time): [(chunk, prefix_offset, read_offset), ...] per add,
    then finish's chunk, the text, stopped and stop_reason."""
    d = make(kind, stop, skip)
    steps, at = [], 0
    for size in sizes or [1] * len(ids):
        chunk = d.add(list(ids[at : at + size]))
        at += size
        steps.append((chunk, d.prefix_offset, d.read_offset))
    last = d.finish()
    return steps, last, d.text, d.stopped, d.stop_reason


def chunks_of(run) -> list[str]:
    steps, last = run[0], run[1]
    return [c for c, _, _ in steps] + [last]


def check_stream(ids, sizes=None, stop=(), skip=True, kind="bpe", want_text=None, what="") -> tuple:
    """The checks that need no engine: every add returns a str, text only grows as a start of the final text with no
    half character at its end, and the chunks add up to it."""
    want = full_decode(kind, ids, skip) if want_text is None else want_text
    d = make(kind, stop, skip)
    chunks, at = [], 0
    note = f"{what}: " if what else ""
    for size in sizes or [1] * len(ids):
        chunk = d.add(list(ids[at : at + size]))
        at += size
        assert isinstance(chunk, str), f"{note}add returns a str, not {type(chunk).__name__}"
        chunks.append(chunk)
        shown = "".join(chunks)
        assert want.startswith(shown), f"{note}after {at} ids the text shown {shown!r} is not a start of {want!r} " \
            "(half a character shown, or text that is not final)"
    last = d.finish()
    assert isinstance(last, str), f"{note}finish returns a str"
    chunks.append(last)
    assert "".join(chunks) == want, f"{note}the chunks {chunks} must add up to {want!r}"
    return chunks, d


def test_example_emoji_split_across_tokens():
    """'a😀b': the emoji is four tokens, each alone a U+FFFD; add shows it whole once its last byte came."""
    ids = encode("a😀b")
    assert len(ids) == 6, "the tiny tokenizer splits the emoji into 4 tokens"
    chunks, _ = check_stream(ids, what="'a😀b' one token at a time")
    assert chunks == ["a", "", "", "", "😀", "b", ""], f"add's chunks for 'a😀b' must be a, '', '', '', 😀, b; " \
        f"finish ''; got {chunks}"


def test_example_stop_string_split_across_tokens():
    """Stop 'is bl' in 'the river is blue': ' is' and ' b' come in separate tokens; text stops before it."""
    ids = encode("the river is blue")
    chunks, d = check_stream(ids, stop=("is bl",), want_text="the river ", what="stop 'is bl'")
    assert (d.stopped, d.stop_reason) == (True, "is bl"), "the stop string was found"
    assert chunks[-1] == "", "after the stop, finish returns ''"


def test_offsets_move_with_each_chunk():
    """'café': prefix_offset and read_offset after each add; they stay put while a character is unfinished."""
    ids = encode("café ok")
    got = stream(ids)
    assert got[0][:5] == [("c", 0, 1), ("a", 1, 2), ("f", 2, 3), ("", 2, 3), ("é", 3, 5)], \
        "after c, a, f, (half of é), é: (chunk, prefix_offset, read_offset) must be these"
    assert got == expected(lambda: stream(ids)), "chunks and offsets differ from the engine's"


def test_stream_cut_inside_a_character_is_flushed_by_finish():
    """A stream that ends inside a character: add never shows it; finish returns the full decode's U+FFFD."""
    g = rng()
    text = g.choice(["ok 你", "go 😀", "x é"])
    ids = encode(text)[:-1]
    chunks, _ = check_stream(ids, what=f"{text!r} cut before its last token")
    assert chunks[-1].endswith(REPLACEMENT), f"finish must return what the window held back: {chunks}"
    assert all(REPLACEMENT not in c for c in chunks[:-1]), f"add never shows half a character: {chunks}"


def test_special_tokens_skipped_or_shown():
    """Special tokens: no text (add returns '' and keeps its offsets) when skipped, their text when not."""
    ids = encode("hi there")[:2] + [2] + encode(" ok") + [0]
    chunks, _ = check_stream(ids, skip=True, what="skip_special_tokens=True")
    assert "<|" not in "".join(chunks), "skipped special tokens show no text"
    chunks, _ = check_stream(ids, skip=False, what="skip_special_tokens=False")
    assert "<|im_end|>" in "".join(chunks), "special tokens show their text when not skipped"
    for skip in (True, False):
        got = stream(ids, skip=skip)
        assert got == expected(lambda skip=skip: stream(ids, skip=skip)), \
            f"skip_special_tokens={skip}: chunks and offsets differ from the engine's"


def test_invalid_byte_in_the_middle_does_not_stall():
    """A lone continuation byte (U+FFFD that no later token can complete) followed by text: the text is shown as
    soon as the window no longer ends with U+FFFD."""
    g = rng()
    lone = encode("😀")[-1]  # the emoji's last byte alone
    tail = encode(g.choice([" then more", " and so on", " ok then"]))
    ids = encode("ok") + [lone] + tail
    k = len(encode("ok"))
    chunks, _ = check_stream(ids, what="'ok', a lone continuation byte, then text")
    assert chunks[k] == "", "the window ending with U+FFFD waits"
    assert chunks[k + 1].startswith(REPLACEMENT) and len(chunks[k + 1]) > 1, \
        f"the next token's text comes out with the invalid byte's U+FFFD before it: {chunks}"
    assert stream(ids) == expected(lambda: stream(ids)), "chunks and offsets differ from the engine's"


def test_sentencepiece_like_decoder_keeps_spaces():
    """A decoder that drops the leading space of what it gets: the window's old tokens keep the spaces between
    words."""
    g = rng()
    text = " ".join(g.sample(["quiet", "river", "runs", "blue", "pages", "seven", "cache"], 4))
    ids = encode(text)
    chunks, _ = check_stream(ids, kind="sp", what=f"{text!r}, SentencePiece-like decode")
    assert "".join(chunks) == text, "every space between words is kept"


def test_add_decodes_a_small_window():
    """However long the stream, no decode in add gets more than a few ids (the window), never the whole stream."""
    g = rng()
    ids = [i for _ in range(12) for t in g.sample(TEXTS, 5) for i in encode(t)]
    counting = Counting(tok())
    d = IncrementalDetokenizer(counting)
    out = "".join(d.add([i]) for i in ids)
    longest = max(counting.lengths)
    assert longest <= 10, f"an add decoded {longest} ids of a {len(ids)}-id stream: decode the window only"
    assert out + d.finish() == tok().decode(ids), "the chunks add up to the full decode"


def test_after_a_stop_add_and_finish_return_nothing():
    """Once stopped, add returns '' (whatever it gets) and finish returns ''."""
    g = rng()
    word = g.choice(["river", "quiet", "blue"])
    ids = encode(f"the {word} runs and runs")
    d = IncrementalDetokenizer(tok(), (word,))
    out = "".join(d.add([i]) for i in ids)
    assert d.stopped is True and d.stop_reason == word, f"the stop string {word!r} was found"
    assert out == "the ", f"the text stops before {word!r}: got {out!r}"
    held = list(d.ids)
    assert len(held) < len(ids) and held == ids[:len(held)], \
        "self.ids: the ids up to the one that completed the stop string (the later adds did nothing)"
    more = d.add(encode(" and more text"))
    assert more == "", f"add after the stop returns '', not {more!r}"
    last = d.finish()
    assert last == "", f"finish after the stop returns '', not {last!r}"
    assert d.text == "the ", "text stays what was shown"
    assert d.ids == held, "add after the stop does nothing else either: self.ids is as it was at the stop"


def test_the_callers_list_is_not_kept():
    """add appends the ids to self.ids: the list given stays the caller's (reused or cleared, nothing changes)."""
    ids = encode("a quiet river runs")
    d = IncrementalDetokenizer(tok(), ())
    buffer = list(ids[:2])
    d.add(buffer)
    buffer.clear()
    rest = list(ids[2:])
    d.add(rest)
    assert (d.ids, rest) == (ids, ids[2:]), "(self.ids, the second list given) after a cleared first list"


def test_add_takes_any_sequence():
    """token_ids is any sequence of ints: a tuple is appended like a list."""
    ids = encode("a quiet river runs")
    d = IncrementalDetokenizer(tok(), ())
    try:
        chunks, error = [d.add(tuple(ids[:2])), d.add(ids[2:3]), d.add(tuple(ids[3:])), d.finish()], None
    except TypeError as e:
        chunks, error = [], f"TypeError: {e}"
    assert error is None, f"add must take a tuple of ids as it takes a list; it raised {error}"
    assert (d.ids, "".join(chunks)) == (ids, full_decode("bpe", ids)), \
        "(self.ids, the text) after adds of a tuple, a list and a tuple"


def test_finish_releases_a_held_tail():
    """A tail that could start a stop string is held by add; the stream ends: finish returns it (final)."""
    ids = encode("the river is")
    chunks, d = check_stream(ids, stop=(" is blue",), what="stop ' is blue', stream 'the river is'")
    assert chunks[-1] == " is", f"finish returns the held ' is': {chunks}"
    assert d.stopped is False, "no stop string was found"


def test_held_text_is_not_returned_twice():
    """Text held then released in add ('i' of 'iver', a possible start of 'is'), and finish after a held tail."""
    g = rng()
    ids = encode("the river is blue")
    stop = g.choice([("is bl",), ("is bx",), (" bluer",), ("ue!",)])
    full = tok().decode(ids)
    want = full[: full.find(stop[0])] if stop[0] in full else full
    check_stream(ids, stop=stop, want_text=want, what=f"stop {stop}")
    assert stream(ids, stop=stop) == expected(lambda: stream(ids, stop=stop)), \
        f"stop {stop}: chunks and offsets differ from the engine's"


def random_ids(g) -> list[int]:
    kind = g.randrange(4)
    texts = [encode(t) for t in g.sample(TEXTS, g.randint(1, 3))]
    if kind == 0:
        ids = [i for t in texts for i in t]
    elif kind == 1:
        ids = texts[0][:]
        g.shuffle(ids)
    elif kind == 2:
        ids = [g.randrange(512) for _ in range(g.randint(1, 25))]
    else:
        ids = [i for t in texts for i in t]
        for _ in range(g.randint(1, 3)):
            ids.insert(g.randint(0, len(ids)), g.choice(SPECIAL))
    return ids[: g.randint(0, len(ids))] if g.random() < 0.4 else ids


def random_sizes(g, n: int) -> list[int]:
    sizes = []
    while sum(sizes) < n:
        sizes.append(min(g.randint(1, 4), n - sum(sizes)))
    return sizes


def test_random_streams_like_the_engine():
    """Random streams (multi-byte text, shuffled ids, random ids, special tokens, cut anywhere), one token or a few
    at a time, either decoder: each add's chunk, the offsets after it and finish's chunk are the engine's."""
    g = rng()
    for n in range(30):
        ids = random_ids(g)
        sizes = random_sizes(g, len(ids)) if g.random() < 0.5 else None
        skip, kind = g.random() < 0.5, g.choice(["bpe", "bpe", "sp"])
        what = f"stream {n}: ids {ids}, sizes {sizes}, skip {skip}, {kind}"
        check_stream(ids, sizes, skip=skip, kind=kind, what=what)
        got = stream(ids, sizes, skip=skip, kind=kind)
        assert got == expected(lambda: stream(ids, sizes, skip=skip, kind=kind)), f"{what}: differs from the engine's"


def test_random_stop_strings_like_the_engine():
    """Random stop strings (pieces of the text, often spanning tokens, or absent): the text is cut before the
    earliest one, and every chunk, offset and the stop reason are the engine's."""
    g = rng()
    stopped = 0
    for n in range(30):
        ids = random_ids(g)
        full = tok().decode(ids, skip_special_tokens=True)
        stops = []
        for _ in range(g.randint(1, 3)):
            if full and g.random() < 0.7:
                at = g.randrange(len(full))
                stops.append(full[at : at + g.randint(1, 6)])
            else:
                stops.append(g.choice(TEXTS)[: g.randint(1, 6)])
        stops = tuple(stops)
        hits = sorted((at, len(s), s) for s in stops if (at := full.find(s)) >= 0)
        want = full[: hits[0][0]] if hits else full
        sizes = random_sizes(g, len(ids)) if g.random() < 0.5 else None
        what = f"stream {n}: ids {ids}, stop {stops}, sizes {sizes}"
        _, d = check_stream(ids, sizes, stop=stops, want_text=want, what=what)
        assert (d.stopped, d.stop_reason) == (bool(hits), hits[0][2] if hits else None), f"{what}: stop reason"
        stopped += d.stopped
        got = stream(ids, sizes, stop=stops)
        assert got == expected(lambda: stream(ids, sizes, stop=stops)), f"{what}: differs from the engine's"
    assert stopped > 5, "the draw stops some streams"


def test_empty_stream():
    """No tokens at all: finish returns ''."""
    d = IncrementalDetokenizer(tok())
    assert d.finish() == "", "an empty stream has no text"
    assert d.text == "", "and text stays ''"

"""How alike two codes are, and which parts they share: copydetect's fingerprints (web/similarity.py uses them).

copydetect tokenises with pygments and writes each identifier as ``V``, each function name as ``F``, each class
name as ``O`` and each string as ``S``, drops comments and layout, and fingerprints the result's k-grams by
winnowing: renamed identifiers (``self`` and ``cls`` too: ``_plain_names``) change nothing, reordered functions or
statements only the k-grams across the seams. The score of a pair is the larger of copydetect's two similarities
(the share of each code found in the other), so a copy padded with code of its own still scores high.

The shared parts are copydetect's matched k-grams, taken back from its filtered text to the code's own
characters here, token by token (its own way back drifts by a few characters after class names and strings,
which would cut the marks into the middle of words).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

# k-grams of 20 characters of the filtered text, every one of them kept (guarantee = noise: winnowing windows of
# 1). Winnowing with wider windows keeps the k-grams whose hash is the least of its window, and copydetect hashes
# with Python's hash(), salted anew in every process: with its default windows of 6 the same pair scored 0.54 in
# one process and 0.63 in another. Windows of 1 score the same everywhere, and the codes here are short enough
# to keep every k-gram. 20 rather than copydetect's 25: a copy whose one-line statements were reordered keeps
# fewer k-grams of 25 across the new seams (the bank's disguised alternatives scored down to 0.40 with 25, 0.75
# with 20), while independent work scores the same (its highest pair 0.69 with both; see similarity.THRESHOLD).
NOISE = GUARANTEE = 20


def normalised(code: str) -> str:
    """The code as it is compared and shown: pygments reads ``\\r\\n`` as ``\\n``, so the characters line up."""
    return code.replace("\r\n", "\n").replace("\r", "\n")


# pygments reads ``self`` and ``cls`` as pseudo-builtins, which copydetect keeps as they are: a copy with ``self``
# renamed (``me``, ``s``) would share almost no k-gram with its original. Compared as names of the same length,
# they are identifiers like the others and the characters still line up with the code shown.
_PSEUDO = re.compile(r"\b(self|cls)\b")


def _plain_names(code: str) -> str:
    return _PSEUDO.sub(lambda m: "_" * (len(m.group(1)) - 1) + "v", code)


def fingerprint(code: str) -> Any:
    from copydetect import CodeFingerprint  # imports matplotlib (its HTML report): only when comparing

    return CodeFingerprint("submission.py", NOISE, GUARANTEE - NOISE + 1,
                           fp=io.StringIO(_plain_names(normalised(code))), language="python")


def score(a: Any, b: Any) -> float:
    """Two fingerprints' score in [0, 1]: 1 when one code is all found in the other."""
    from copydetect import compare_files

    _, (sim_a, sim_b), _ = compare_files(a, b)
    return min(1.0, max(0.0, float(max(sim_a, sim_b))))


@dataclass(frozen=True)
class Match:
    score: float
    spans_a: list[tuple[int, int]]  # [start, end) character ranges of code a (normalised) found in code b
    spans_b: list[tuple[int, int]]


def _token_spans(code: str) -> tuple[str, list[tuple[int, int]]]:
    """copydetect's filtered text of ``code`` and, for each of its characters, the token of ``code`` it stands
    for (as copydetect.utils.filter_code makes it: the same tokens, the same rules)."""
    from pygments import lexers, token

    lexer = lexers.get_lexer_by_name("python")
    at = len(code) - len(code.lstrip("\n"))  # pygments strips leading newlines (stripnl)
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    variables = {token.Name, token.Name.Variable, token.Name.Attribute}
    for kind, value in lexer.get_tokens(code):
        span = (at, at + len(value))
        if kind in variables:
            text = "V"
        elif kind in token.Name.Function:
            text = "F"
        elif kind in token.Name.Class:
            text = "O"
        elif kind == token.Comment.Preproc or kind == token.Comment.Hashbang:
            text = "P"
        elif kind in token.Text or kind in token.Comment:
            text = ""
        elif kind in token.Literal.String:
            text = '"' if value in ("'", '"') else "S"
        else:
            text = value
        out.append(text)
        spans.extend([span] * len(text))
        at += len(value)
    return "".join(out), spans


def _shared(fp: Any, idx: Any, length: int) -> list[tuple[int, int]]:
    from copydetect.utils import get_copied_slices

    slices = get_copied_slices(idx, fp.k)
    if len(slices[0]) == 0:
        return []
    filtered, spans = _token_spans(fp.raw_code)
    if filtered != fp.filtered_code or not spans:  # another pygments than copydetect's rules know: no marks
        return []
    out: list[tuple[int, int]] = []
    for start, end in zip(slices[0].tolist(), slices[1].tolist()):
        start, end = max(0, int(start)), min(len(spans), int(end))
        if start >= end:
            continue
        lo, hi = spans[start][0], min(length, spans[end - 1][1])
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def compare_codes(a: str, b: str) -> Match:
    """The score of two codes and the parts of each found in the other (ranges of ``normalised(code)``)."""
    from copydetect.utils import find_fingerprint_overlap

    fa, fb = fingerprint(a), fingerprint(b)
    idx_a, idx_b = find_fingerprint_overlap(fa.hashes, fb.hashes, fa.hash_idx, fb.hash_idx)
    return Match(score(fa, fb), _shared(fa, idx_a, len(fa.raw_code)), _shared(fb, idx_b, len(fb.raw_code)))


def marked_html(code: str, spans: list[tuple[int, int]]) -> Markup:
    """``normalised(code)`` as escaped HTML, each span in ``<mark>``: learner code is never inserted unescaped."""
    code = normalised(code)
    out, at = [], 0
    for start, end in spans:
        out.append(str(escape(code[at:start])))
        out.append(f"<mark>{escape(code[start:end])}</mark>")
        at = end
    out.append(str(escape(code[at:])))
    return Markup("".join(out))

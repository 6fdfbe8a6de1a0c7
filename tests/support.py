"""Helpers shared by the test suite: the tiny-model LLM builder, greedy params, the Hugging Face reference,
and `need` (skip on a laptop, fail in CI). Test modules import them from here (`from tests.support import ...`):
never from a conftest.py, which pytest imports under the one name `conftest` for every folder."""

from __future__ import annotations

import functools
import os
import socket

import pytest
import torch

from minisgl.core import SamplingParams
from minisgl.llm import LLM

IN_CI = os.environ.get("CI", "").lower() == "true"
# headless Chromium on a machine without a network: no background connections, no sandbox as root
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

SMALL = dict(dtype=torch.float32, max_running_req=8, num_page_override=256, max_seq_len_override=160, device="cpu")


def build_llm(path, **overrides) -> LLM:
    return LLM(path, **{**SMALL, **overrides})


def greedy(n: int) -> SamplingParams:
    return SamplingParams(max_tokens=n, ignore_eos=True)


@functools.cache
def hf_reference(path: str, prompts: tuple, n: int) -> tuple:
    from minisgl.testing import hf_greedy

    return tuple(tuple(t) for t in hf_greedy(path, [p if isinstance(p, str) else list(p) for p in prompts], n))


def hf_tokens(path, prompts, n) -> list[list[int]]:
    return [list(t) for t in hf_reference(str(path), tuple(p if isinstance(p, str) else tuple(p) for p in prompts), n)]


def need(condition: bool, reason: str) -> None:
    """Skip when a piece is missing on a developer's machine; fail under CI=true, where it must be there."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


def free_port(ports: range) -> int:
    """A port of ``ports`` free on 127.0.0.1 now, tried from a place that depends on the process (xdist workers
    sharing a range rarely race for the same one)."""
    start = (os.getpid() * 7) % len(ports)
    for port in list(ports[start:]) + list(ports[:start]):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


TIE = 1e-5  # float32 logits of two correct implementations differ by about this much


def assert_greedy_equal(got: list[list[int]], want: list[list[int]], margins: list[list[float]], what: str) -> int:
    """Each prompt's tokens equal transformers' (``want``), except that where one first differs, transformers'
    top-2 logits at that step must be within TIE (a float near-tie; the rest of that prompt is not compared).
    Returns how many prompts ended on such a tie."""
    from minisgl.testing import greedy_differences

    differences = greedy_differences(got, want, margins, TIE)
    assert not differences, (f"{what}: (prompt, first differing step, ours, transformers') where they differ by more "
                             f"than a near-tie (top-2 logits within {TIE}): {differences}")
    return sum(list(g) != list(w) for g, w in zip(got, want))

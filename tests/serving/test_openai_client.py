"""The official `openai` client against `minisgl serve` on SmolLM2: greedy replies equal transformers' (text and
token count), streaming equals non-streaming, 32 concurrent streams equal each prompt alone (transformers, one at a
time), a client that goes away gets its pages back, stop strings end a reply."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.serving.running import launch_server
from tests.support import need

openai = pytest.importorskip("openai")

MAX_TOKENS = 12
PROMPTS = [
    "The capital of France is",
    "Write a haiku about the sea.",
    "def fibonacci(n):",
    "List three prime numbers:",
    "中国的首都是",
    "请用一句话介绍你自己。",
    "日本語で挨拶してください:",
    "Emoji time: 😀🎉🚀 means",
    "Translate to French: I love 🍕 and ☕",
    "for (int i = 0; i < n; i++) {",
    "SELECT name FROM users WHERE",
    "import numpy as np\nx = np.",
    "Once upon a time, in a land far away,",
    "Q: What is 12 * 7?\nA:",
    "Le café est",
    "Résumé: naïve façade, déjà vu —",
    "Привет! Как дела?",
    "<html><body><h1>",
    "{\"name\": \"Alice\", \"age\":",
    "The quick brown fox 🦊 jumps over",
    "🌍🌎🌏 The planet Earth",
    "数学: 1 + 1 =",
]


def _hf_reference(path) -> dict:
    """Greedy transformers outputs (new ids, cut after the first EOS as generate() stops there) per prompt and mode."""
    from minisgl.models import ModelConfig
    from minisgl.testing import hf_greedy, hf_tokenizer

    tok = hf_tokenizer(path)
    eos = set(ModelConfig.from_path(path).eos_token_ids)
    completion_ids = [list(tok.encode(p)) for p in PROMPTS]
    chat_ids = [list(tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True)["input_ids"])
                for p in PROMPTS]
    out = {}
    for mode, prompts in (("completion", completion_ids), ("chat", chat_ids)):
        refs = []
        for ids in hf_greedy(path, prompts, MAX_TOKENS):
            cut = next((i + 1 for i, t in enumerate(ids) if t in eos), len(ids))
            refs.append((tok.decode(ids[:cut], skip_special_tokens=True), cut, "stop" if cut < len(ids) or
                         ids[cut - 1] in eos else "length"))
        out[mode] = refs
    return out


@pytest.fixture(scope="module")
def served_and_reference():
    """The server, and transformers' replies computed here while it boots in its own processes."""
    from minisgl.testing import smollm2_path

    served = launch_server(smollm2_path())
    try:
        reference = _hf_reference(smollm2_path())
        served.wait_ready()
        yield served, reference
    finally:
        code = served.stop()
    assert code == 0, "\n".join(served.log)


@pytest.fixture(scope="module")
def smollm2_server(served_and_reference):
    return served_and_reference[0]


@pytest.fixture(scope="module")
def hf_reference(served_and_reference):
    return served_and_reference[1]


@pytest.fixture(scope="module")
def client(smollm2_server):
    return openai.OpenAI(base_url=f"{smollm2_server.url}/v1", api_key="none", max_retries=0, timeout=300)


def _model(client) -> str:
    return client.models.list().data[0].id


def _ask(client, model: str, mode: str, prompt: str, stream: bool, max_tokens: int = MAX_TOKENS, **kw):
    """(text, completion tokens, finish reason) of one greedy request."""
    if mode == "chat":
        args = dict(model=model, messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0,
                    **kw)
        if not stream:
            r = client.chat.completions.create(**args)
            return r.choices[0].message.content, r.usage.completion_tokens, r.choices[0].finish_reason
        chunks = list(client.chat.completions.create(**args, stream=True, stream_options={"include_usage": True}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    else:
        args = dict(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0, **kw)
        if not stream:
            r = client.completions.create(**args)
            return r.choices[0].text, r.usage.completion_tokens, r.choices[0].finish_reason
        chunks = list(client.completions.create(**args, stream=True, stream_options={"include_usage": True}))
        text = "".join(c.choices[0].text for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == 1 and not chunks[-1].choices, "one usage chunk, last, with no choices"
    assert len(finish) == 1, f"one chunk carries the finish reason, got {finish}"
    return text, usage[0].completion_tokens, finish[0]


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_greedy_replies_equal_transformers_and_streaming_equals_non_streaming(client, hf_reference, mode):
    model = _model(client)
    with ThreadPoolExecutor(8) as pool:  # concurrent: the server batches them
        plain = list(pool.map(lambda p: _ask(client, model, mode, p, False), PROMPTS))
        streamed = list(pool.map(lambda p: _ask(client, model, mode, p, True), PROMPTS))
    for prompt, got, ref, s in zip(PROMPTS, plain, hf_reference[mode], streamed):
        assert got == ref, f"{mode} {prompt!r}: server {got} != transformers {ref}"
        assert s == got, f"{mode} {prompt!r}: streamed {s} != non-streamed {got}"


def test_32_concurrent_streams_equal_each_alone(client, hf_reference):
    """32 streams at once (the prompts, some twice) each equal transformers' greedy reply to that prompt alone, one
    prompt at a time: a stronger "alone" than the server's own, which the batch might bend the same way."""
    model = _model(client)
    order = (list(range(len(PROMPTS))) * 2)[:32]
    with ThreadPoolExecutor(32) as pool:
        together = list(pool.map(lambda i: _ask(client, model, "completion", PROMPTS[i], True), order))
    for i, got in zip(order, together):
        assert got == hf_reference["completion"][i], f"{PROMPTS[i]!r} in a batch of 32: {got}"


def _settled(server, timeout: float = 30) -> dict:
    """/stats once nothing runs and nothing is locked: every page free or cached-and-evictable."""
    deadline = time.monotonic() + timeout
    while True:
        s = server.stats()
        if (s["requests"] == 0 and s["free_pages"] + s["cached_pages"] == s["num_pages"]
                and s["evictable_pages"] == s["cached_pages"]) or time.monotonic() > deadline:
            return s
        time.sleep(0.2)


def test_a_client_that_goes_away_mid_stream_gets_its_pages_back(smollm2_server, client):
    server = smollm2_server
    model = _model(client)
    before = _settled(server)
    body = {"model": model, "prompt": "Tell me a very long story about dragons.", "max_tokens": 400,
            "temperature": 0, "stream": True, "ignore_eos": True}
    with requests.post(f"{server.url}/v1/completions", json=body, stream=True, timeout=60) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        got = [next(lines) for _ in range(6)]  # a few chunks, then hang up
        assert any(line.startswith(b"data: ") for line in got)
        during = server.stats()
    assert during["requests"] == 1 and during["free_pages"] < before["free_pages"]
    after = _settled(server)
    assert after["requests"] == 0, after
    assert after["free_pages"] + after["cached_pages"] == after["num_pages"], after
    assert after["evictable_pages"] == after["cached_pages"], f"a page is still locked: {after}"
    assert after["integrity_errors"] == []
    # and it keeps serving
    assert _ask(client, model, "completion", PROMPTS[0], False)[1] >= 1


def test_stop_strings_end_the_reply_before_them(client):
    model = _model(client)
    text, _, _ = _ask(client, model, "completion", "Count: 1, 2, 3,", False, extra_body={"ignore_eos": True})
    need(", " in text, f"the model's reply has no ', ' to stop at: {text!r}")
    stop = text[text.index(", "):text.index(", ") + 2]
    cut, n, finish = _ask(client, model, "completion", "Count: 1, 2, 3,", False, stop=[stop, "never-there"],
                          extra_body={"ignore_eos": True})
    assert (cut, finish) == (text[: text.index(stop)], "stop")
    s_cut, _, s_finish = _ask(client, model, "completion", "Count: 1, 2, 3,", True, stop=stop,
                              extra_body={"ignore_eos": True})
    assert (s_cut, s_finish) == (cut, "stop")
    assert 1 <= n <= MAX_TOKENS


def test_the_benchmark_client_measures_minisgl_serve(smollm2_server, tmp_path):
    """`python -m minisgl bench` against the real server: every request completes with its exact lengths (the
    server counts the prompt tokens the client drew), and the JSON holds the figures."""
    import json
    import subprocess
    import sys

    from minisgl.testing import smollm2_path

    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "minisgl", "bench", "--url", smollm2_server.url, "--num-requests", "8",
                          "--input-len", "8-40", "--output-len", "4-8", "--rate", "20", "--seed", "3",
                          "--tokenizer", str(smollm2_path()), "--no-progress", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    s = json.loads(out.read_text())["summary"]
    assert (s["completed"], s["failed"], s["short_outputs"]) == (8, 0, 0), s
    assert s["server_prompt_tokens"] == s["total_input_tokens"], "the prompts have the token lengths drawn"
    assert s["total_output_tokens"] == s["requested_output_tokens"]
    assert 0 < s["ttft_ms"]["p50"] <= s["ttft_ms"]["p99"] and s["output_throughput"] > 0
    assert "TTFT" in run.stdout

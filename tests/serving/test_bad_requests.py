"""Malformed and unsupported requests get a 4xx in OpenAI's error shape, never a 500, and the server goes on
serving. A real server on a tiny model (context 512)."""

from __future__ import annotations

import json

import pytest
import requests

from tests.serving.running import start_server


@pytest.fixture(scope="module")
def tiny_server():
    from minisgl.testing import tiny_model

    served = start_server(tiny_model("llama"))
    yield served
    assert served.stop() == 0, "\n".join(served.log)


def _ok(model: str = "", **kw) -> dict:
    return {"model": model, "prompt": "hello world", "max_tokens": 4, "temperature": 0, **kw}


def _without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


MODEL = "tiny-llama-gqa-untied-seed0-v2"
OK = _ok(MODEL)
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
# (name, path, body (a dict is sent as JSON, bytes as they are), the status, the field the error names or None)
BAD = [
    ("invalid JSON", "/v1/completions", b"{", 400, None),
    ("not UTF-8", "/v1/completions", b"\xff\xfe{}", 400, None),
    ("a JSON list", "/v1/completions", b"[]", 400, None),
    ("JSON nested 100 000 deep", "/v1/completions", b"[" * 100_000 + b"]" * 100_000, 400, None),
    ("a token id past 64 bits", "/v1/completions", {**OK, "prompt": [5, 2**70]}, 400, "prompt"),
    ("a negative token id", "/v1/completions", {**OK, "prompt": [5, -1]}, 400, "prompt"),
    ("a seed past 64 bits", "/v1/completions", {**OK, "seed": 2**70}, 400, "seed"),
    ("a negative seed", "/v1/completions", {**OK, "seed": -1}, 400, "seed"),
    ("top_k past 64 bits", "/v1/completions", {**OK, "top_k": 2**70}, 400, "top_k"),
    ("max_tokens past 64 bits", "/v1/completions", {**OK, "max_tokens": 2**70}, 400, "max_tokens"),
    ("temperature NaN", "/v1/completions", b'{"model": "%s", "prompt": "a", "temperature": NaN}' % MODEL.encode(), 400,
     "temperature"),
    ("no model", "/v1/completions", _without(OK, "model"), 400, "model"),
    ("model not a string", "/v1/completions", {**OK, "model": 123}, 400, "model"),
    ("unknown model", "/v1/completions", {**OK, "model": "gpt-4"}, 404, "model"),
    ("no prompt", "/v1/completions", _without(OK, "prompt"), 400, "prompt"),
    ("prompt a number", "/v1/completions", {**OK, "prompt": 123}, 400, "prompt"),
    ("two prompts", "/v1/completions", {**OK, "prompt": ["a", "b"]}, 400, "prompt"),
    ("empty prompt", "/v1/completions", {**OK, "prompt": ""}, 400, "prompt"),
    ("token id outside the vocabulary", "/v1/completions", {**OK, "prompt": [5, 99999999]}, 400, "prompt"),
    ("negative max_tokens", "/v1/completions", {**OK, "max_tokens": -1}, 400, "max_tokens"),
    ("zero max_tokens", "/v1/completions", {**OK, "max_tokens": 0}, 400, "max_tokens"),
    ("max_tokens a string", "/v1/completions", {**OK, "max_tokens": "10"}, 400, "max_tokens"),
    ("max_tokens a float", "/v1/completions", {**OK, "max_tokens": 1.5}, 400, "max_tokens"),
    ("max_tokens a bool", "/v1/completions", {**OK, "max_tokens": True}, 400, "max_tokens"),
    ("huge max_tokens", "/v1/completions", {**OK, "max_tokens": 10**12}, 400, "max_tokens"),
    ("max_tokens past the context", "/v1/completions", {**OK, "max_tokens": 600}, 400, "max_tokens"),
    ("prompt longer than the context", "/v1/completions", {**OK, "prompt": "hello " * 2000}, 400, "prompt"),
    ("negative temperature", "/v1/completions", {**OK, "temperature": -1}, 400, "temperature"),
    ("temperature a string", "/v1/completions", {**OK, "temperature": "hot"}, 400, "temperature"),
    ("top_p 0", "/v1/completions", {**OK, "top_p": 0}, 400, "top_p"),
    ("top_p above 1", "/v1/completions", {**OK, "top_p": 1.5}, 400, "top_p"),
    ("top_k 0", "/v1/completions", {**OK, "top_k": 0}, 400, "top_k"),
    ("seed a string", "/v1/completions", {**OK, "seed": "abc"}, 400, "seed"),
    ("n=2", "/v1/completions", {**OK, "n": 2}, 400, "n"),
    ("five stop strings", "/v1/completions", {**OK, "stop": list("abcde")}, 400, "stop"),
    ("an empty stop string", "/v1/completions", {**OK, "stop": [""]}, 400, "stop"),
    ("stop a number", "/v1/completions", {**OK, "stop": 5}, 400, "stop"),
    ("stream a string", "/v1/completions", {**OK, "stream": "yes"}, 400, "stream"),
    ("stream_options without stream", "/v1/completions", {**OK, "stream_options": {"include_usage": True}}, 400,
     "stream_options"),
    ("ignore_eos a string", "/v1/completions", {**OK, "ignore_eos": "true"}, 400, "ignore_eos"),
    ("logprobs", "/v1/completions", {**OK, "logprobs": 3}, 400, "logprobs"),
    ("logit_bias", "/v1/completions", {**OK, "logit_bias": {"1": 5}}, 400, "logit_bias"),
    ("presence_penalty", "/v1/completions", {**OK, "presence_penalty": 0.5}, 400, "presence_penalty"),
    ("echo", "/v1/completions", {**OK, "echo": True}, 400, "echo"),
    ("best_of", "/v1/completions", {**OK, "best_of": 3}, 400, "best_of"),
    ("an unknown field", "/v1/completions", {**OK, "foo": 1}, 400, "foo"),
    ("messages on completions", "/v1/completions", {**OK, "messages": []}, 400, "messages"),
    ("no messages", "/v1/chat/completions", _without(CHAT, "messages"), 400, "messages"),
    ("empty messages", "/v1/chat/completions", {**CHAT, "messages": []}, 400, "messages"),
    ("a message not an object", "/v1/chat/completions", {**CHAT, "messages": ["hi"]}, 400, "messages[0]"),
    ("a tool role", "/v1/chat/completions", {**CHAT, "messages": [{"role": "tool", "content": "x"}]}, 400,
     "messages[0].role"),
    ("an image part", "/v1/chat/completions",
     {**CHAT, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, 400,
     "messages[0].content"),
    ("tools", "/v1/chat/completions", {**CHAT, "tools": [{"type": "function", "function": {"name": "f"}}]}, 400,
     "tools"),
    ("json response_format", "/v1/chat/completions", {**CHAT, "response_format": {"type": "json_object"}}, 400,
     "response_format"),
    ("no chat template", "/v1/chat/completions", CHAT, 400, "messages"),  # the tiny model's tokenizer has none
    ("prompt on chat", "/v1/chat/completions", {**CHAT, "prompt": "x"}, 400, "prompt"),
]


@pytest.mark.parametrize("name,path,body,status,param", BAD, ids=[b[0] for b in BAD])
def test_a_bad_request_gets_a_4xx_in_openai_shape(tiny_server, name, path, body, status, param):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = requests.post(tiny_server.url + path, data=data, headers={"content-type": "application/json"}, timeout=60)
    assert r.status_code == status, f"{name}: {r.status_code} {r.text[:300]}"
    err = r.json()["error"]
    assert isinstance(err["message"], str) and err["message"] and err["type"], err
    assert err["param"] == param, f"{name}: the error names {err['param']!r}, not {param!r}: {err['message']}"


def test_wrong_methods_paths_and_huge_bodies_get_openai_errors_and_the_server_goes_on(tiny_server):
    url = tiny_server.url
    r = requests.get(url + "/v1/completions", timeout=30)
    assert r.status_code == 405 and "error" in r.json()
    r = requests.post(url + "/v1/nothing", json=OK, timeout=30)
    assert r.status_code == 404 and "error" in r.json()
    big = json.dumps({**OK, "prompt": "x" * (10 << 20)}).encode()  # 10 MB
    r = requests.post(url + "/v1/completions", data=big, headers={"content-type": "application/json"}, timeout=60)
    assert r.status_code == 413 and "error" in r.json()
    r = requests.post(url + "/v1/completions", json=OK, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert 1 <= body["usage"]["completion_tokens"] <= 4 and body["choices"][0]["finish_reason"] in ("stop", "length")
    s = tiny_server.stats()
    assert s["integrity_errors"] == [] and s["requests"] == 0


def test_a_stream_of_a_refused_request_is_a_4xx_not_a_broken_stream(tiny_server):
    r = requests.post(tiny_server.url + "/v1/completions", json={**OK, "max_tokens": 600, "stream": True}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "max_tokens"

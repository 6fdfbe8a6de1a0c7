"""`minisgl serve --tp N`: the scheduler process is rank 0 and hands each step's messages to the other ranks (one
process each, gloo); replies equal one rank's; a size that does not divide is refused with both numbers; a rank that
dies ends the server, which says which."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from minisgl.core import SamplingParams
from minisgl.llm import LLM
from minisgl.testing import hf_tokenizer, smollm2_path, tiny_model
from tests.serving.running import REPO, start_server

PROMPTS = [[1, 2, 3, 4], [7, 8, 9], [5] * 12, [100, 200, 300, 400, 500, 17]]


def _ranks(served) -> list[int]:
    """The rank processes: the scheduler's children named msgl-tp<r>."""
    sched = served.workers()["msgl-scheduler"]
    out = []
    for task in Path(f"/proc/{sched}/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip().startswith("msgl-tp"):
                    out.append(int(pid))
            except FileNotFoundError:
                pass
    return out


def _ask(url: str, model: str, prompt: list[int], n: int = 8) -> str:
    r = requests.post(f"{url}/v1/completions", json={"model": model, "prompt": prompt, "max_tokens": n,
                                                     "temperature": 0, "ignore_eos": True}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def test_tp_2_serves_what_one_rank_generates_and_a_dead_rank_ends_it():
    path = tiny_model("llama")
    llm = LLM(path)
    tok = hf_tokenizer(path)
    want = [tok.decode(o["token_ids"], skip_special_tokens=True)
            for o in llm.generate(PROMPTS, SamplingParams(max_tokens=8, ignore_eos=True))]
    llm.shutdown()
    served = start_server(path, "--tp", "2")
    try:
        ranks = _ranks(served)
        assert len(ranks) == 1, f"one rank process beside the scheduler (rank 0): {ranks}"
        with ThreadPoolExecutor(4) as pool:  # concurrent: batched, the same steps on both ranks
            got = list(pool.map(lambda p: _ask(served.url, path.name, p), PROMPTS))
        assert got == want
        stats = served.stats()
        assert stats["requests"] == 0 and stats["integrity_errors"] == []
        os.kill(ranks[0], signal.SIGKILL)
        try:
            _ask(served.url, path.name, PROMPTS[0], 200)
        except (requests.RequestException, AssertionError):
            pass  # the reply fails one way or another; what matters is below
        code = served.proc.wait(60)
    finally:
        if served.proc.poll() is None:
            served.stop()
    log = "\n".join(served.log)
    assert code != 0 and f"tensor-parallel rank 1 (pid {ranks[0]}) died" in log, log[-2000:]
    time.sleep(0.5)
    assert not Path(f"/proc/{ranks[0]}").exists() or "Z" in Path(f"/proc/{ranks[0]}/stat").read_text().split()[2]


def test_a_tp_size_that_does_not_divide_is_refused():
    run = subprocess.run([sys.executable, "-m", "minisgl", "serve", "--model", str(smollm2_path()), "--port", "0",
                          "--tp", "2"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "tp_size 2 does not divide the model's attention heads, 9" in run.stderr, run.stderr[-2000:]

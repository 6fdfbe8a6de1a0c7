"""python -m minisgl generate: prints completions; bad input is a clear error with exit status 2."""

import subprocess
import sys
from pathlib import Path

from minisgl.testing import PROMPTS, hf_greedy

ROOT = Path(__file__).resolve().parent.parent


def minisgl(*args):
    return subprocess.run([sys.executable, "-m", "minisgl", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_generate_prints_completions_and_ids(qwen3):
    r = minisgl("generate", "--model", str(qwen3), "--max-tokens", "8", "--ids", "--device", "cpu", PROMPTS[1],
                PROMPTS[2])
    assert r.returncode == 0, r.stderr
    ids = [line.split("ids: ")[1] for line in r.stdout.splitlines() if "ids: " in line]
    assert ids == [str(t) for t in hf_greedy(qwen3, PROMPTS[1:3], 8)]
    assert r.stdout.startswith(PROMPTS[1])
    assert "tok/s" in r.stderr


def test_generate_with_a_bad_model_folder(tmp_path):
    r = minisgl("generate", "--model", str(tmp_path), "hi")
    assert r.returncode == 2 and "no config.json" in r.stderr and "Traceback" not in r.stderr


def test_generate_with_bad_max_tokens(qwen3):
    r = minisgl("generate", "--model", str(qwen3), "--max-tokens", "0", "hi")
    assert r.returncode == 2 and "max_tokens must be a positive integer" in r.stderr

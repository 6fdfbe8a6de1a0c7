"""Offline throughput: minisgl vs transformers generate on SmolLM2-135M-Instruct, same prompts, greedy.

    python tools/setup_models.py          # once: converts SmolLM2 into models/
    python benchmarks/throughput.py       # 16 prompts x 64 new tokens; prints tok/s and the ratio

Both run in this process, interleaved, float32 on the CPU (or CUDA if present), EOS ignored so that every
prompt gets exactly --new-tokens tokens. Each side runs once untimed (warm-up), then --repeat times; the best run
counts (the machine is noisy; the best is the least disturbed)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minisgl.core import SamplingParams  # noqa: E402
from minisgl.llm import LLM  # noqa: E402
from minisgl.testing import smollm2_path  # noqa: E402

TOPICS = ["the history of Paris", "how a CPU cache works", "baking sourdough bread", "the water cycle",
          "binary search trees", "the planets of the solar system", "how vaccines work", "the French revolution",
          "writing a Python decorator", "how airplanes fly", "the rules of chess", "photosynthesis",
          "how a hash map works", "the Roman empire", "making a cup of tea", "how GPUs run neural networks"]


def make_prompts(n: int) -> list[str]:
    return [f"Write a short paragraph about {TOPICS[i % len(TOPICS)]}." + " Be concise." * (i % 4) for i in range(n)]


def load_transformers(path: Path, device: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device).eval()
    model.generation_config = GenerationConfig()  # nothing inherited: no EOS stop, no sampling settings
    return tok, model


def bench_transformers(hf, prompts: list[str], new_tokens: int, device: str) -> tuple[float, list[list[int]]]:
    from transformers import GenerationConfig

    tok, model = hf
    cfg = GenerationConfig(do_sample=False, max_new_tokens=new_tokens, pad_token_id=tok.pad_token_id or 0)
    enc = tok(prompts, return_tensors="pt", padding=True).to(device)
    t = time.perf_counter()
    with torch.no_grad():
        out = model.generate(**enc, generation_config=cfg)
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t
    new = out[:, enc["input_ids"].shape[1]:].tolist()
    assert all(len(x) == new_tokens for x in new)
    return elapsed, new


def bench_minisgl(llm: LLM, prompts: list[str], new_tokens: int) -> tuple[float, list[list[int]]]:
    t = time.perf_counter()
    out = llm.generate(prompts, SamplingParams(max_tokens=new_tokens, ignore_eos=True))
    if llm.engine.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t, [o["token_ids"] for o in out]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--attention-backend", default="torch_static",
                    help="minisgl's backend (default torch_static: batched decode; 'torch' is the per-request "
                         "reference)")
    args = ap.parse_args()
    path = smollm2_path()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    prompts = make_prompts(args.prompts)
    total = args.prompts * args.new_tokens
    print(f"SmolLM2-135M-Instruct, float32, {device}, torch threads {torch.get_num_threads()}; "
          f"{args.prompts} prompts x {args.new_tokens} new tokens = {total} tokens", flush=True)

    llm = LLM(path, dtype=torch.float32, device=device, max_running_req=args.prompts, max_seq_len_override=512,
              attention_backend=args.attention_backend, cache_type="naive")
    print(f"minisgl: attention backend {type(llm.engine.attn_backend).__name__}; threads {torch.get_num_threads()}")
    bench_minisgl(llm, prompts[:2], 4)  # warm-up
    hf_model = load_transformers(path, device)
    bench_transformers(hf_model, prompts[:2], 4, device)
    ms, hf = [], []
    for _ in range(args.repeat):  # interleaved, so that a slow spell of the machine hits both
        ms.append(bench_minisgl(llm, prompts, args.new_tokens))
        hf.append(bench_transformers(hf_model, prompts, args.new_tokens, device))
    llm.shutdown()

    t_ms, t_hf = min(t for t, _ in ms), min(t for t, _ in hf)
    same = sum(a == b for a, b in zip(ms[0][1], hf[0][1]))
    print(f"{'engine':<14}{'best s':>9}{'tok/s':>10}   runs (s)")
    print(f"{'minisgl':<14}{t_ms:>9.2f}{total / t_ms:>10.1f}   {', '.join(f'{t:.2f}' for t, _ in ms)}")
    print(f"{'transformers':<14}{t_hf:>9.2f}{total / t_hf:>10.1f}   {', '.join(f'{t:.2f}' for t, _ in hf)}")
    print(f"ratio minisgl / transformers (throughput): {t_hf / t_ms:.2f}x")
    print(f"identical outputs: {same} of {args.prompts} prompts (batched HF pads on the left, which can change "
          f"float rounding)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

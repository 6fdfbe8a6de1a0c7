"""minisgl against transformers on SmolLM2-135M-Instruct, greedy, float32, in one process and one run:

    python tools/setup_models.py          # once: converts SmolLM2 into models/
    python benchmarks/throughput.py       # the memory floor, batch-1 decode, the serving mix, offline 16 x 64

1. The memory floor: the bytes of weights a decode step reads (every linear layer and the LM head) over the read
   bandwidth measured here, now (the best of a few passes of sum and dot over a tensor larger than the caches).
2. Batch-1 decode: one step's time for each engine (a long generation minus a short one, over the extra steps),
   as a share of the floor; the tokens must be equal (no batching, no padding: the same arithmetic).
3. The serving mix: 32 requests, prompts of 16-256 tokens and outputs of 8-128 (seeded), useful tokens only.
   minisgl runs them all at once with continuous batching; transformers runs static batches (sorted by output
   length, the best case a static batcher could hope for) of a few sizes, and its best size counts.
4. Offline: 16 prompts x 64 new tokens in one call each.

transformers runs float32 with its default attention under no_grad; EOS is ignored so that every request gets
exactly its number of tokens. The machine is noisy: every figure is the best of a few runs, the two engines
interleaved, and only the ratios within this run mean anything."""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minisgl.core import SamplingParams  # noqa: E402
from minisgl.llm import LLM  # noqa: E402
from minisgl.testing import CORPUS_PATH, smollm2_path  # noqa: E402

TOPICS = ["the history of Paris", "how a CPU cache works", "baking sourdough bread", "the water cycle",
          "binary search trees", "the planets of the solar system", "how vaccines work", "the French revolution",
          "writing a Python decorator", "how airplanes fly", "the rules of chess", "photosynthesis",
          "how a hash map works", "the Roman empire", "making a cup of tea", "how GPUs run neural networks"]
TARGETS = {"batch1": 0.80, "mix": 3.0, "offline": 2.0}


def make_prompts(n: int) -> list[str]:
    return [f"Write a short paragraph about {TOPICS[i % len(TOPICS)]}." + " Be concise." * (i % 4) for i in range(n)]


def make_mix(tok, n: int, seed: int) -> list[tuple[list[int], int]]:
    """n (prompt ids, output length): prompts cut from the corpus at random places, 16-256 tokens, outputs 8-128."""
    ids = tok.encode(CORPUS_PATH.read_text())
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length, start = rng.randint(16, 256), rng.randrange(0, len(ids) - 256)
        out.append((ids[start : start + length], rng.randint(8, 128)))
    return out


def best_of(n: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(n))


# -- the memory floor

def read_bandwidth(repeat: int = 5) -> float:
    """Bytes per second of the fastest plain read of a 1 GiB float32 tensor (sum, or dot with itself)."""
    x = torch.ones(1 << 28)
    best = float("inf")
    for _ in range(repeat):
        for fn in (lambda: x.sum(), lambda: torch.dot(x, x)):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
    return x.numel() * x.element_size() / best


def weight_bytes_per_step(llm: LLM) -> int:
    from minisgl.engine.linear_path import model_linears, weights_of

    return sum(w.numel() * w.element_size() for w, _ in map(weights_of, model_linears(llm.engine.model)))


# -- the two engines

def load_transformers(path: Path, device: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device).eval()
    model.generation_config = GenerationConfig()  # nothing inherited: no EOS stop, no sampling settings
    return tok, model


def hf_generate(hf, prompts: list[list[int]], new_tokens: int, device: str) -> tuple[float, list[list[int]]]:
    """One static batch, padded on the left: (seconds, the new tokens of each prompt)."""
    from transformers import GenerationConfig

    tok, model = hf
    cfg = GenerationConfig(do_sample=False, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                           pad_token_id=tok.pad_token_id or 0)
    enc = tok.pad({"input_ids": prompts}, return_tensors="pt", padding=True).to(device)
    t = time.perf_counter()
    with torch.no_grad():
        out = model.generate(**enc, generation_config=cfg)
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t
    new = out[:, enc["input_ids"].shape[1]:].tolist()
    assert all(len(x) == new_tokens for x in new)
    return elapsed, new


def ms_generate(llm: LLM, prompts: list[list[int]], new_tokens: list[int]) -> tuple[float, list[list[int]]]:
    params = [SamplingParams(max_tokens=n, ignore_eos=True) for n in new_tokens]
    t = time.perf_counter()
    out = llm.generate(prompts, params)
    if llm.engine.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t, [o["token_ids"] for o in out]


def decode_step(gen: Callable[[int], tuple[float, list[list[int]]]], repeat: int, short: int = 2,
                long: int = 66) -> tuple[float, list[list[int]]]:
    """Seconds per decode step: (a long generation - a short one) / the extra steps, each the best of repeat."""
    t_short = best_of(repeat, lambda: gen(short)[0])
    runs = [gen(long) for _ in range(repeat)]
    return (min(t for t, _ in runs) - t_short) / (long - short), runs[0][1]


def hf_static_mix(hf, mix: list[tuple[list[int], int]], bs: int, device: str) -> tuple[float, dict[int, list[int]]]:
    """The mix in static batches of bs, sorted by output length; each batch runs to its longest output."""
    order = sorted(range(len(mix)), key=lambda i: (mix[i][1], len(mix[i][0])))
    total, outs = 0.0, {}
    for s in range(0, len(order), bs):
        idx = order[s : s + bs]
        t, new = hf_generate(hf, [mix[i][0] for i in idx], max(mix[i][1] for i in idx), device)
        total += t
        for i, tokens in zip(idx, new):
            outs[i] = tokens[: mix[i][1]]  # the useful tokens; the rest of the batch's steps were padding
    return total, outs


def verdict(value: float, target: float) -> str:
    return f"target >= {target:g}: {'met' if value >= target else 'MISSED'}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each timed figure; the best counts")
    ap.add_argument("--mix-repeat", type=int, default=1, help="runs of the serving mix (each one is long)")
    ap.add_argument("--mix-bs", default="8,16,32", help="transformers' static batch sizes to try on the mix")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mix-requests", type=int, default=32, help="requests of the serving mix (fewer: a smoke test)")
    ap.add_argument("--attention-backend", default="torch_static",
                    help="minisgl's backend (default torch_static: batched decode; 'torch' is the per-request "
                         "reference)")
    ap.add_argument("--linear-backend", default="auto", help="minisgl's linear path (default auto)")
    args = ap.parse_args()
    path = smollm2_path()
    device = "cuda" if torch.cuda.is_available() else "cpu"

    t0 = time.perf_counter()
    llm = LLM(path, dtype=torch.float32, device=device, max_running_req=max(32, args.mix_requests),
              max_seq_len_override=512,
              attention_backend=args.attention_backend, cache_type="naive", linear_backend=args.linear_backend)
    start_up = time.perf_counter() - t0
    hf = load_transformers(path, device)
    tok = hf[0]
    print(f"SmolLM2-135M-Instruct, float32, {device}, torch threads {torch.get_num_threads()}; minisgl: "
          f"{type(llm.engine.attn_backend).__name__}, linear path {llm.engine.linear_path!r} "
          f"(engine start-up {start_up:.1f} s)", flush=True)
    ms_generate(llm, [tok.encode(p) for p in make_prompts(2)], [4, 4])  # warm-up
    hf_generate(hf, [tok.encode(p) for p in make_prompts(2)], 4, device)

    # 1. the floor
    nbytes, bandwidth = weight_bytes_per_step(llm), read_bandwidth()
    floor = nbytes / bandwidth
    print(f"\nmemory floor: {nbytes / 1e6:.0f} MB of weights per decode step / {bandwidth / 1e9:.1f} GB/s read "
          f"bandwidth = {floor * 1e3:.1f} ms per step", flush=True)

    # 2. batch-1 decode
    one = [tok.encode(make_prompts(1)[0])]
    step_ms, out_ms = decode_step(lambda n: ms_generate(llm, one, [n]), args.repeat)
    step_hf, out_hf = decode_step(lambda n: hf_generate(hf, one, n, device), args.repeat)
    print(f"batch-1 decode step: minisgl {step_ms * 1e3:.1f} ms ({floor / step_ms:.0%} of the floor), "
          f"transformers {step_hf * 1e3:.1f} ms ({floor / step_hf:.0%} of the floor); minisgl "
          f"{step_hf / step_ms:.2f}x faster; tokens equal: {out_ms == out_hf}; "
          f"{verdict(floor / step_ms, TARGETS['batch1'])}", flush=True)

    # 3. the serving mix
    mix = make_mix(tok, args.mix_requests, args.seed)
    useful = sum(n for _, n in mix)
    print(f"\nserving mix: {len(mix)} requests (seed {args.seed}), prompts {min(len(p) for p, _ in mix)}-"
          f"{max(len(p) for p, _ in mix)} tokens ({sum(len(p) for p, _ in mix)} in all), outputs "
          f"{min(n for _, n in mix)}-{max(n for _, n in mix)} ({useful} useful tokens)", flush=True)
    ms_runs = [ms_generate(llm, [p for p, _ in mix], [n for _, n in mix]) for _ in range(args.mix_repeat)]
    t_mix_ms = min(t for t, _ in ms_runs)
    print(f"  minisgl continuous batching: {t_mix_ms:.2f} s, {useful / t_mix_ms:.1f} useful tok/s", flush=True)
    hf_best, hf_outs = float("inf"), {}
    for bs in [int(b) for b in args.mix_bs.split(",")]:
        runs = [hf_static_mix(hf, mix, bs, device) for _ in range(args.mix_repeat)]
        t = min(t for t, _ in runs)
        print(f"  transformers static batches of {bs:>2}: {t:.2f} s, {useful / t:.1f} useful tok/s", flush=True)
        if t < hf_best:
            hf_best, hf_outs = t, runs[0][1]
    same = sum(ms_runs[0][1][i] == hf_outs[i] for i in range(len(mix)))
    print(f"  ratio minisgl / best static transformers (useful tokens): {hf_best / t_mix_ms:.2f}x; "
          f"{verdict(hf_best / t_mix_ms, TARGETS['mix'])}; identical outputs: {same} of {len(mix)} (padded "
          f"batches round differently)", flush=True)

    # 4. offline 16 x 64
    prompts = [tok.encode(p) for p in make_prompts(16)]
    ms, hfr = [], []
    for _ in range(args.repeat):  # interleaved, so that a slow spell of the machine hits both
        ms.append(ms_generate(llm, prompts, [64] * 16))
        hfr.append(hf_generate(hf, prompts, 64, device))
    llm.shutdown()
    t_ms, t_hf = min(t for t, _ in ms), min(t for t, _ in hfr)
    same = sum(a == b for a, b in zip(ms[0][1], hfr[0][1]))
    print(f"\noffline 16 x 64: minisgl {t_ms:.2f} s ({1024 / t_ms:.1f} tok/s), transformers {t_hf:.2f} s "
          f"({1024 / t_hf:.1f} tok/s); ratio {t_hf / t_ms:.2f}x; {verdict(t_hf / t_ms, TARGETS['offline'])}; "
          f"identical outputs: {same} of 16 (batched transformers pads on the left, which can change float rounding)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

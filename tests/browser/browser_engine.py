"""What the engine produces with whatever `import torch` gives: real PyTorch here, the browser's layer in the
Python 3.12 venv (run_engine.py). The test compares the two runs; nothing here knows which torch it has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# every combination the engine can run on a CPU: 2 models x graphs x page sizes x caches x backends
CONFIGS = [dict(model=m, graphs=g, page_size=p, cache_type=c, backend=b)
           for m in ("qwen3", "llama") for g in (False, True) for p in (1, 16) for c in ("radix", "naive")
           for b in ("torch", "torch_static")]


def _llm(model: str, graphs: bool, page_size: int, cache_type: str, backend: str) -> Any:
    import torch

    from minisgl.llm import LLM
    from minisgl.testing import tiny_model

    return LLM(str(tiny_model(model)), dtype=torch.float32, max_running_req=8, num_page_override=64,
               max_seq_len_override=64, page_size=page_size, cache_type=cache_type, attention_backend=backend,
               cuda_graph_max_bs=4 if graphs else 0, device="cpu")


def engine_tokens() -> dict[str, Any]:
    """Greedy tokens of 3 prompts x 8 new tokens, twice (the second run hits the prefix cache), per config."""
    from judge.testing import PROMPT_IDS
    from minisgl.core import SamplingParams

    out = {}
    for cfg in CONFIGS:
        llm = _llm(**cfg)
        try:
            greedy = SamplingParams(max_tokens=8, ignore_eos=True)
            first = [o["token_ids"] for o in llm.generate([list(p) for p in PROMPT_IDS[:3]], greedy)]
            again = [o["token_ids"] for o in llm.generate([list(p) for p in PROMPT_IDS[:3]], greedy)]
            out["-".join(map(str, cfg.values()))] = {"first": first, "again": again,
                                                     "graphs": sorted(llm.engine.graph_runner.graph_map)}
        finally:
            llm.shutdown()
    return out


def chunked_tokens() -> dict[str, Any]:
    """Chunked prefill (a budget of 8 tokens) and radix eviction (12 pages of 4) under a shared prefix, overlap
    scheduling on and off; the second round hits the cache. The pages must stay consistent."""
    import torch

    from judge.testing import PROMPT_IDS
    from minisgl.core import SamplingParams
    from minisgl.env import ENV
    from minisgl.llm import LLM
    from minisgl.testing import tiny_model

    out = {}
    shared = list(range(7, 25))
    for overlap in (True, False):
        ENV.DISABLE_OVERLAP_SCHEDULING.value = not overlap
        llm = LLM(str(tiny_model("qwen3")), dtype=torch.float32, max_running_req=4, num_page_override=12, page_size=4,
                  chunked_prefill_size=8, max_seq_len_override=48, device="cpu")
        try:
            params = SamplingParams(max_tokens=5, ignore_eos=True)
            prompts = [shared + p for p in PROMPT_IDS]
            rounds = [[o["token_ids"] for o in llm.generate(prompts, params)] for _ in range(2)]
            out[f"overlap={overlap}"] = {"tokens": rounds, "integrity": llm.scheduler.check_integrity()}
        finally:
            llm.shutdown()
            ENV.DISABLE_OVERLAP_SCHEDULING.value = False
    return out


def sampled_tokens() -> dict[str, Any]:
    """A seeded sampled request: alone, again, and in a batch beside other requests (graphs off and on)."""
    from judge.testing import PROMPT_IDS
    from minisgl.core import SamplingParams

    out = {}
    for graphs in (False, True):
        llm = _llm("qwen3", graphs, 1, "radix", "torch")
        try:
            seeded = SamplingParams(temperature=0.8, top_k=20, top_p=0.9, seed=7, max_tokens=8, ignore_eos=True)
            other = SamplingParams(temperature=1.2, top_p=0.8, max_tokens=8, ignore_eos=True)
            greedy = SamplingParams(max_tokens=8, ignore_eos=True)
            prompt = list(PROMPT_IDS[1])
            alone = llm.generate([prompt], seeded)[0]["token_ids"]
            again = llm.generate([prompt], seeded)[0]["token_ids"]
            batch = llm.generate([list(PROMPT_IDS[0]), prompt, list(PROMPT_IDS[2])], [other, seeded, greedy])
            other_seed = llm.generate([prompt], SamplingParams(temperature=0.8, top_k=20, top_p=0.9, seed=8,
                                                               max_tokens=8, ignore_eos=True))[0]["token_ids"]
            out[f"graphs={graphs}"] = {"alone": alone, "again": again, "in_batch": batch[1]["token_ids"],
                                      "greedy_in_batch": batch[2]["token_ids"], "other_seed": other_seed}
        finally:
            llm.shutdown()
    return out


def seeded_tokens() -> dict[str, Any]:
    """The scenario of the browser's tests/browser/test_node_tokens.py: three seeded sampled requests in one batch
    (temperature 0.8, top-k 20, top-p 0.9, seeds 1234..1236) on tiny Qwen3 and on tiny Llama (MHA, tied), and the
    second one alone in another engine configuration (graphs, page size 16, naive cache, torch_static)."""
    import torch

    from minisgl.core import SamplingParams
    from minisgl.llm import LLM
    from minisgl.testing import tiny_model

    prompts = [[17, 301, 45], [5, 88, 140, 7, 260, 33], [400, 12, 9, 77, 150, 3, 201, 64, 95]]
    sampled = [SamplingParams(max_tokens=8, ignore_eos=True, temperature=0.8, top_k=20, top_p=0.9, seed=1234 + i)
               for i in range(len(prompts))]

    def run(path: Any, graphs: bool, page: int, cache: str, backend: str, params: Any, batch: list) -> list:
        llm = LLM(str(path), dtype=torch.float32, max_running_req=8, num_page_override=256, max_seq_len_override=160,
                  device="cpu", page_size=page, cache_type=cache, attention_backend=backend,
                  cuda_graph_max_bs=4 if graphs else 0)
        try:
            return [o["token_ids"] for o in llm.generate(batch, params)]
        finally:
            llm.shutdown()

    out = {}
    for name, path in {"qwen3-gqa-untied": tiny_model("qwen3"),
                       "llama-mha-tied": tiny_model("llama", gqa=False, tied=True)}.items():
        out[f"{name} batch"] = run(path, False, 1, "radix", "torch", sampled, prompts)
        out[f"{name} alone"] = run(path, True, 16, "naive", "torch_static", sampled[1], prompts[1:2])
    return out

"""python -m minisgl generate --model PATH "prompt" ...   print greedy (or sampled) completions
python -m minisgl serve --model PATH                    an OpenAI-compatible server (port 1919)
python -m minisgl shell --model PATH                    chat in the terminal
python -m minisgl bench --url URL                       benchmark any OpenAI-compatible server"""

from __future__ import annotations

import argparse
import sys
import time

_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m minisgl", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="complete prompts with a model folder (Hugging Face safetensors)")
    g.add_argument("prompts", nargs="+", help="one or more prompts")
    g.add_argument("--model", help="model folder (default: SmolLM2-135M-Instruct from tools/setup_models.py)")
    g.add_argument("--max-tokens", type=int, default=32)
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--top-k", type=int, default=-1)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--dtype", choices=sorted(_DTYPES), default="float32")
    g.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    g.add_argument("--attention-backend", default=None)
    g.add_argument("--cuda-graph-max-bs", type=int, default=None)
    g.add_argument("--linear-backend", default="auto",
                   choices=["auto", "default", "transposed", "onednn", "onednn16", "mkl1"],
                   help="the CPU's linear kernels (default auto: measured at start-up against F.linear)")
    g.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks, one process each (default 1)")
    g.add_argument("--ids", action="store_true", help="also print the token ids")
    from minisgl.server.args import add_arguments as serve_arguments

    serve_arguments(sub.add_parser("serve", help="serve a model over OpenAI's API (FastAPI on uvicorn)"))
    from minisgl.shell import add_arguments as shell_arguments

    shell_arguments(sub.add_parser("shell", help="chat with a model in the terminal"))
    from minisgl.benchmark import add_arguments as bench_arguments

    bench_arguments(sub.add_parser("bench", help="benchmark an OpenAI-compatible server (TTFT, ITL, latency, "
                                                 "throughput)"))
    return ap


def _default_model() -> str | None:
    from minisgl.testing import smollm2_path

    try:
        return str(smollm2_path())
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from minisgl.server.args import from_namespace
        from minisgl.server.launch import serve

        args.model = args.model or _default_model()
        return serve(from_namespace(args)) if args.model else 2
    if args.command == "shell":
        from minisgl.shell import main as shell

        args.model = args.model or _default_model()
        return shell(args) if args.model else 2
    if args.command == "bench":
        from minisgl.benchmark import main as bench

        return bench(args)
    import torch

    from minisgl.core import SamplingParams
    from minisgl.distributed.ranks import RankDiedError
    from minisgl.llm import LLM
    from minisgl.models import ModelLoadError

    model = args.model
    if model is None:
        from minisgl.testing import smollm2_path

        try:
            model = smollm2_path()
        except FileNotFoundError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    try:
        llm = LLM(model, dtype=getattr(torch, _DTYPES[args.dtype]), device=args.device,
                  attention_backend=args.attention_backend, cuda_graph_max_bs=args.cuda_graph_max_bs,
                  linear_backend=args.linear_backend, tp_size=args.tp,
                  max_seq_len_override=2048, max_running_req=max(8, len(args.prompts)))
        params = SamplingParams(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                                max_tokens=args.max_tokens, seed=args.seed)
        t1 = time.perf_counter()
        outs = llm.generate(args.prompts, params)
    except (ModelLoadError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RankDiedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    t2 = time.perf_counter()
    for prompt, out in zip(args.prompts, outs):
        print(f"{prompt}\033[1m{out['text']}\033[0m" if sys.stdout.isatty() else f"{prompt}{out['text']}")
        if args.ids:
            print(f"  ids: {out['token_ids']}")
    n = sum(len(o["token_ids"]) for o in outs)
    print(f"[{n} tokens in {t2 - t1:.2f} s ({n / (t2 - t1):.1f} tok/s); load {t1 - t0:.2f} s]", file=sys.stderr)
    llm.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GPU check: CUDA Graph capture, equality with eager, replay counts, a missing copy, decode-step timing; the
engine's Triton kernels (minisgl/kernel) against torch, compiled and timed (on a CPU: Triton's interpreter).

    python tools/gpu_check.py            # on an NVIDIA GPU: real CUDA graphs, and a timing table
    python tools/gpu_check.py --quick    # on a CPU (CI): EmulatedGraph, smaller shapes, no timing claims

Needs nothing but PyTorch and safetensors (FlashInfer and Triton are used when installed): the models are random
checkpoints written here, one tiny and one with Qwen3-0.6B's shapes (bfloat16).
Exit status 0 only when every check holds."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minisgl.core import Batch, SamplingParams, get_global_ctx  # noqa: E402
from minisgl.engine.graph import GraphCaptureBuffer  # noqa: E402
from minisgl.env import ENV  # noqa: E402
from minisgl.llm import LLM  # noqa: E402

TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, vocab_size=512)
QWEN3_06B = dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, vocab_size=151936)


def write_random_qwen3(folder: Path, shape: dict, dtype: torch.dtype, seed: int = 0) -> Path:
    """A Qwen3 checkpoint with random weights, in Hugging Face's names and layout."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    h, inter, hd = shape["hidden_size"], shape["intermediate_size"], shape["head_dim"]
    nq, nkv, vocab = shape["num_attention_heads"], shape["num_key_value_heads"], shape["vocab_size"]

    def rand(*size, std=0.5):
        return (torch.randn(*size, generator=g) * std / (size[-1] ** 0.5 if len(size) > 1 else 1)).to(dtype)

    w = {"model.embed_tokens.weight": rand(vocab, h, std=1.0 * h**0.5), "model.norm.weight": torch.ones(h, dtype=dtype),
         "lm_head.weight": rand(vocab, h, std=4.0)}
    for i in range(shape["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w |= {p + "input_layernorm.weight": torch.ones(h, dtype=dtype),
              p + "post_attention_layernorm.weight": torch.ones(h, dtype=dtype),
              p + "self_attn.q_proj.weight": rand(nq * hd, h), p + "self_attn.k_proj.weight": rand(nkv * hd, h),
              p + "self_attn.v_proj.weight": rand(nkv * hd, h), p + "self_attn.o_proj.weight": rand(h, nq * hd),
              p + "self_attn.q_norm.weight": torch.ones(hd, dtype=dtype),
              p + "self_attn.k_norm.weight": torch.ones(hd, dtype=dtype)}
        if "num_experts" in shape:  # Qwen3-MoE: a router and experts in every layer
            e_inter = shape["moe_intermediate_size"]
            w[p + "mlp.gate.weight"] = rand(shape["num_experts"], h, std=4.0)
            for e in range(shape["num_experts"]):
                w |= {f"{p}mlp.experts.{e}.gate_proj.weight": rand(e_inter, h),
                      f"{p}mlp.experts.{e}.up_proj.weight": rand(e_inter, h),
                      f"{p}mlp.experts.{e}.down_proj.weight": rand(h, e_inter)}
        else:
            w |= {p + "mlp.gate_proj.weight": rand(inter, h), p + "mlp.up_proj.weight": rand(inter, h),
                  p + "mlp.down_proj.weight": rand(h, inter)}
    folder.mkdir(parents=True, exist_ok=True)
    save_file(w, str(folder / "model.safetensors"))
    arch = "Qwen3MoeForCausalLM" if "num_experts" in shape else "Qwen3ForCausalLM"
    config = {"architectures": [arch], "model_type": "qwen3", "rms_norm_eps": 1e-6,
              "rope_theta": 1000000.0, "max_position_embeddings": 4096, "tie_word_embeddings": False,
              "eos_token_id": 0, **shape}
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    return folder


def prompts(n: int, vocab: int, seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(1, vocab, (5 + 7 * i,), generator=g).tolist() for i in range(n)]


class Check:
    def __init__(self) -> None:
        self.failed = 0

    def __call__(self, ok: bool, what: str) -> None:
        print(f"  [{'ok' if ok else 'FAIL'}] {what}", flush=True)
        self.failed += not ok


def run_model(name: str, path: Path, dtype: torch.dtype, device: str, max_bs: int, check: Check) -> None:
    vocab = json.loads((path / "config.json").read_text())["vocab_size"]
    kw = dict(dtype=dtype, device=device, max_running_req=16, num_page_override=4096, max_seq_len_override=256)
    steps = 16
    print(f"\n== {name} ({dtype}, {device})", flush=True)
    for n in (1, 3, 8):
        ps = prompts(n, vocab)
        outs = {}
        for graphs in (0, max_bs):
            llm = LLM(path, cuda_graph_max_bs=graphs, **kw)
            runner, replays, decodes = llm.engine.graph_runner, [], []
            orig_replay, orig_forward = runner.replay, llm.engine.forward_batch
            runner.replay = lambda b, o=orig_replay: (replays.append(b.padded_size), o(b))[1]
            llm.engine.forward_batch = lambda b, o=orig_forward: (decodes.append(b.size) if b.is_decode else None,
                                                                  o(b))[1]
            outs[graphs] = [o["token_ids"] for o in llm.generate(ps, SamplingParams(max_tokens=steps,
                                                                                    ignore_eos=True))]
            if graphs:
                check(sorted(runner.graph_map) == runner.graph_bs_list and len(runner.graph_map) > 0,
                      f"bs={n}: captured {len(runner.graph_map)} graphs "
                      f"({'torch.cuda.CUDAGraph' if device == 'cuda' else 'EmulatedGraph'})")
                check(len(replays) == len(decodes) == steps - 1,
                      f"bs={n}: every decode step replayed a graph ({len(replays)} of {len(decodes)})")
            llm.shutdown()
        check(outs[0] == outs[max_bs], f"bs={n}: greedy tokens with graphs == without ({steps} tokens each)")
        distinct = len({t for out in outs[0] for t in out})
        check(distinct >= 4, f"bs={n}: the output is not degenerate ({distinct} distinct tokens)")
    # leaving out one copy must change the output
    orig = GraphCaptureBuffer.copy_from

    def without_positions(self, batch):
        s = slice(batch.padded_size)
        self.input_ids[s] = batch.input_ids
        self.out_loc[s] = batch.out_loc

    ps = prompts(3, vocab)
    llm = LLM(path, cuda_graph_max_bs=max_bs, **kw)
    good = [o["token_ids"] for o in llm.generate(ps, SamplingParams(max_tokens=steps, ignore_eos=True))]
    GraphCaptureBuffer.copy_from = without_positions
    try:
        bad = [o["token_ids"] for o in llm.generate(ps, SamplingParams(max_tokens=steps, ignore_eos=True))]
    finally:
        GraphCaptureBuffer.copy_from = orig
        llm.shutdown()
    check(good != bad, "positions left out of copy_from: the output changes")


def time_decode(path: Path, dtype: torch.dtype, sizes: list[int], iters: int) -> list[tuple[int, float, float]]:
    """ms per decode step, eagerly and by replay, for a batch of dummy requests (one token each)."""
    llm = LLM(path, dtype=dtype, device="cuda", max_running_req=max(sizes), num_page_override=4096,
              max_seq_len_override=256, cuda_graph_bs=sizes)
    engine, runner = llm.engine, llm.engine.graph_runner
    rows = []
    for bs in sizes:
        batch = Batch(reqs=[engine.dummy_req] * bs, phase="decode")
        batch.input_ids = torch.zeros(bs, dtype=torch.int32, device="cuda")
        batch.positions = torch.zeros(bs, dtype=torch.int32, device="cuda")
        batch.out_loc = torch.full((bs,), engine.kv_cache.dummy_slot, dtype=torch.int32, device="cuda")
        engine.attn_backend.prepare_metadata(batch)
        ctx = get_global_ctx()

        def eager():
            with ctx.forward_batch(batch):
                engine.model.forward()

        def replay():
            with ctx.forward_batch(batch):
                runner.replay(batch)

        result = []
        for fn in (eager, replay):
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(iters):
                fn()
            torch.cuda.synchronize()
            result.append((time.perf_counter() - t) / iters * 1e3)
        rows.append((bs, result[0], result[1]))
    llm.shutdown()
    return rows


def run_kernels(device: str, check: Check) -> None:
    """minisgl/kernel's Triton kernels against their torch versions: compiled on CUDA (and timed), in Triton's
    interpreter on a CPU (small shapes); bit for bit."""
    cuda = device == "cuda"
    if not cuda:
        os.environ["TRITON_INTERPRET"] = "1"  # read when triton is first imported, just below
    try:
        import triton  # noqa: F401
    except ImportError:
        print("\n== Triton kernels: not run (triton is not installed)")
        return
    from minisgl.kernel import gather_rows, gather_rows_torch, store_kv, store_kv_torch

    print(f"\n== Triton kernels ({'compiled, ' + device if cuda else 'interpreter, cpu'})", flush=True)
    g = torch.Generator().manual_seed(0)
    for page_size, head_dim, n in ((1, 64, 1), (16, 128, 300 if cuda else 37)):
        heads, slots = 8 if cuda else 2, 4096
        kc, vc = (torch.randn(slots, heads, head_dim, generator=g).to(device, torch.bfloat16) for _ in range(2))
        k, v = (torch.randn(n, heads, head_dim, generator=g).to(device, torch.bfloat16) for _ in range(2))
        loc = torch.randperm(slots // page_size, generator=g)[: (n + page_size - 1) // page_size]
        loc = (loc[:, None] * page_size + torch.arange(page_size)).flatten()[:n].to(device, torch.int32)
        wk, wv = kc.clone(), vc.clone()
        store_kv_torch(wk, wv, k, v, loc)
        store_kv(kc, vc, k, v, loc)
        check(torch.equal(kc, wk) and torch.equal(vc, wv),
              f"store_kv == torch: page size {page_size}, head dim {head_dim}, {n} tokens, bfloat16")
        if cuda:
            t_torch = _cuda_ms(lambda: store_kv_torch(wk, wv, k, v, loc))
            t_triton = _cuda_ms(lambda: store_kv(kc, vc, k, v, loc))
            print(f"  store_kv {n} tokens: torch {t_torch * 1000:.1f} us, triton {t_triton * 1000:.1f} us "
                  f"({t_torch / t_triton:.2f}x)")
    weight = torch.randn(4096, 1024, generator=g).to(device, torch.bfloat16)
    ids = torch.randint(0, 4096, (300 if cuda else 37,), generator=g).to(device, torch.int32)
    check(torch.equal(gather_rows(weight, ids), gather_rows_torch(weight, ids)),
          f"gather_rows == F.embedding: {ids.numel()} ids, dim 1024, bfloat16")
    if cuda:
        t_torch, t_triton = _cuda_ms(lambda: gather_rows_torch(weight, ids)), _cuda_ms(lambda: gather_rows(weight, ids))
        print(f"  gather_rows {ids.numel()} ids: torch {t_torch * 1000:.1f} us, triton {t_triton * 1000:.1f} us "
              f"({t_torch / t_triton:.2f}x)")


def run_moe(folder: Path, device: str, check: Check) -> None:
    """The Mixture-of-Experts backends on random routings and in the engine: the Triton grouped GEMM (compiled on
    CUDA, the interpreter on a CPU) against the torch reference."""
    try:
        import triton  # noqa: F401
    except ImportError:
        print("\n== MoE: the Triton backend not run (triton is not installed)")
        return
    from minisgl.moe import MOE_BACKENDS, route

    cuda = device == "cuda"
    print(f"\n== MoE, Triton grouped GEMM ({'compiled' if cuda else 'interpreter'}) against the torch reference")
    g = torch.Generator().manual_seed(0)
    t, h, inter, experts, k = (256, 1024, 512, 64, 8) if cuda else (24, 64, 32, 8, 2)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(t, h, generator=g).to(device, dtype)
        gate_up = (torch.randn(experts * 2 * inter, h, generator=g) / h**0.5).to(device, dtype)
        down = (torch.randn(experts * h, inter, generator=g) / inter**0.5).to(device, dtype)
        weights, ids = route(torch.randn(t, experts, generator=g).to(device, dtype), k, True)
        want = MOE_BACKENDS.get("torch")(x, weights, ids, gate_up, down).float()
        got = MOE_BACKENDS.get("triton")(x, weights, ids, gate_up, down).float()
        err = float((got - want).abs().max() / want.abs().max())
        check(err < (1e-5 if dtype == torch.float32 else 3e-2),
              f"{t} tokens, {experts} experts, top-{k}, {str(dtype)[6:]}: max error {err:.1e} of the largest value")
        if cuda:
            ref = _cuda_ms(lambda: MOE_BACKENDS.get("torch")(x, weights, ids, gate_up, down), 20)
            fused = _cuda_ms(lambda: MOE_BACKENDS.get("triton")(x, weights, ids, gate_up, down), 20)
            print(f"  {str(dtype)[6:]}: torch reference {ref:.3f} ms, triton {fused:.3f} ms ({ref / fused:.2f}x)")
    kw = dict(device=device, max_running_req=8, num_page_override=1024, max_seq_len_override=128)
    ps = prompts(4, 512)
    outs = {}
    for backend in ("torch", "triton"):
        llm = LLM(folder, moe_backend=backend, **kw)
        outs[backend] = [o["token_ids"] for o in llm.generate(ps, SamplingParams(max_tokens=12, ignore_eos=True))]
        llm.shutdown()
    same = sum(a == b for a, b in zip(outs["torch"], outs["triton"]))
    check(same >= len(ps) - 1, f"tiny Qwen3-MoE, greedy: {same} of {len(ps)} prompts give the same 12 tokens with "
          "both backends (float32; a float near-tie may flip one)")


def run_fa(folder: Path, label: str, check: Check) -> None:
    """The FlashAttention-3 backend against torch_static on a bfloat16 model, with CUDA graphs on and off."""
    if not torch.cuda.is_available():
        print("\n== FlashAttention: not run (no CUDA device); tests/test_fa_backend.py checks its metadata on a CPU")
        return
    try:
        from minisgl.attention.fa import _flash_attn_with_kvcache

        _flash_attn_with_kvcache()
    except ImportError as e:
        print(f"\n== FlashAttention: not run ({e})")
        return
    print(f"\n== FlashAttention-3 (fa) against torch_static, {label}, bfloat16")
    kw = dict(dtype=torch.bfloat16, device="cuda", max_running_req=16, num_page_override=4096,
              max_seq_len_override=256)
    vocab = json.loads((folder / "config.json").read_text())["vocab_size"]
    ps = prompts(8, vocab)
    outs = {}
    for backend, graphs in (("torch_static", 0), ("fa", 0), ("fa", 8)):
        llm = LLM(folder, attention_backend=backend, cuda_graph_max_bs=graphs, page_size=16, **kw)
        outs[backend, graphs] = [o["token_ids"] for o in llm.generate(ps, SamplingParams(max_tokens=16,
                                                                                         ignore_eos=True))]
        llm.shutdown()
    for graphs in (0, 8):
        same = sum(a == b for a, b in zip(outs["torch_static", 0], outs["fa", graphs]))
        check(same >= len(ps) - 2, f"graphs {'on' if graphs else 'off'}: {same} of {len(ps)} prompts give "
              "torch_static's 16 tokens (bfloat16: a near-tie may flip one or two)")
    check(outs["fa", 0] == outs["fa", 8], "fa: greedy tokens with graphs == without")


def run_tp(folder: Path, check: Check) -> None:
    """Tensor parallelism with NCCL, one GPU per rank, where two are present."""
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        print("\n== TP=2: not run (fewer than two GPUs); on a CPU tests/test_tp.py runs it with gloo")
        return
    print("\n== TP=2, NCCL, cuda:0 and cuda:1")
    kw = dict(device="cuda", max_running_req=8, num_page_override=1024, max_seq_len_override=128)
    ps = prompts(4, 512)
    outs = {}
    for tp in (1, 2):
        llm = LLM(folder, tp_size=tp, **kw)
        outs[tp] = [o["token_ids"] for o in llm.generate(ps, SamplingParams(max_tokens=12, ignore_eos=True))]
        llm.shutdown()
    check(outs[1] == outs[2], "tiny Qwen3: greedy tokens with 2 ranks == 1 rank")


def _cuda_ms(fn, iters: int = 200) -> float:
    """Median milliseconds of ``fn`` on the current stream (CUDA events), after a warm-up."""
    for _ in range(10):
        fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small shapes (the default on a CPU)")
    args = ap.parse_args()
    ENV.DISABLE_OVERLAP_SCHEDULING.value = False
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    quick = args.quick or not cuda
    print(f"torch {torch.__version__}; device: {torch.cuda.get_device_name() if cuda else 'cpu (EmulatedGraph)'}")
    if cuda:
        try:
            import flashinfer  # noqa: F401
            print("attention backend: fi (FlashInfer)")
        except ImportError:
            print("attention backend: torch_static (FlashInfer not installed)")
    check = Check()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tiny = write_random_qwen3(Path(tmp) / "tiny", TINY, torch.float32)
        run_model("tiny Qwen3", tiny, torch.float32, device, 8, check)
        run_kernels(device, check)
        moe = write_random_qwen3(Path(tmp) / "tiny-moe", dict(TINY, num_experts=8, num_experts_per_tok=2,
                                                              moe_intermediate_size=32, norm_topk_prob=True),
                                 torch.float32)
        run_moe(moe, device, check)
        run_tp(tiny, check)
        big_shape = dict(QWEN3_06B, num_hidden_layers=2, vocab_size=4096) if quick else QWEN3_06B
        big = write_random_qwen3(Path(tmp) / "qwen3-0.6b-shape", big_shape, torch.bfloat16)
        label = "Qwen3-0.6B shapes" + (" (2 layers, vocab 4096: --quick)" if quick else "")
        run_model(label, big, torch.bfloat16, device, 16 if quick else 64, check)
        run_fa(big, label, check)
        if cuda:
            print(f"\n== decode step, {label}, bfloat16: eager vs CUDA graph replay")
            print(f"{'bs':>4} {'eager ms':>10} {'graph ms':>10} {'speedup':>8}")
            for bs, e, g in time_decode(big, torch.bfloat16, [1, 8, 64], iters=50):
                print(f"{bs:>4} {e:>10.3f} {g:>10.3f} {e / g:>7.2f}x")
        else:
            print("\n(no CUDA device: no timing; the table needs a real GPU)")
    print(f"\n{'all checks passed' if not check.failed else f'{check.failed} checks FAILED'} "
          f"in {time.perf_counter() - t0:.1f} s")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())

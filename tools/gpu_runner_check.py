#!/usr/bin/env python3
"""One-shot check of the grading runner's judging path on a real NVIDIA GPU (issue 10, "Done when" 7).

    python tools/gpu_runner_check.py                  # on a GPU machine, no Docker needed
    python tools/gpu_runner_check.py --docker IMAGE   # also through the docker executor (device_requests)
    python tools/gpu_runner_check.py --allow-cpu      # rehearse the script on a CPU (judge mode local)

1. The machine: nvidia-smi, torch and CUDA, FlashInfer.
2. The job image's judging path, without Docker: ``python -m runner.job`` as the reference side and as the
   learner side (what the two job containers run: the learner with the redacted engine copy), mode ``gpu``,
   one seed; the runner's referee decides. A CUDA Graph exercise's reference must be accepted with its
   GPU-only tests (real capture, one memory pool) passed, not skipped; a mutant must get wrong_answer.
3. With ``--docker IMAGE``: the same through the docker executor, one GPU reserved per container.
4. Eager vs CUDA-graph decode time per step (the tiny model, float32; tools/gpu_check.py's timing).

Exit status 0 when every check holds. Prints one line per check and the timing table.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.exercise import find_exercise  # noqa: E402
from judge.solution import reference_source  # noqa: E402
from runner.executors import DockerExecutor, LocalExecutor, Slot  # noqa: E402

FAILED: list[str] = []


def check(ok: bool, what: str) -> bool:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        FAILED.append(what)
    return ok


class HostSides(LocalExecutor):
    """The docker executor's two sides and referee, each side a local subprocess instead of a container."""

    kind = "host-sides"
    MASK = ()
    MEASURES = [m for m in DockerExecutor.MEASURES if m not in ("docker", "read-only-root", "no-network")]
    trusted_verdict = DockerExecutor.trusted_verdict
    run_sides = DockerExecutor.run_sides


def judge(executor, slot: Slot, code: str, exercise: str) -> dict:
    t = time.perf_counter()
    out = executor.judge({"id": 0, "exercise": exercise, "mode": "gpu", "code": code, "run": False}, slot,
                         threading.Event())
    v = out.verdict or {"status": f"handed back: {out.reason}", "tests": []}
    print(f"    {v['status']} {v.get('passed')}/{v.get('total')} in {time.perf_counter() - t:.1f} s; "
          f"env {v.get('env')}; trust {v.get('trust', {}).get('level')}", flush=True)
    return v


def check_judging(executor, slot: Slot, exercise: str, mutant: Path, want_gpu: bool, label: str) -> None:
    e = find_exercise(exercise)
    print(f"\n== {label}: {exercise}")
    v = judge(executor, slot, reference_source(e), exercise)
    check(v["status"] == "accepted", f"{label}: the reference is accepted ({v.get('message', '')[:200]})")
    check(v.get("trust", {}).get("level") == "trusted", f"{label}: judged in trusted mode")
    gpu_tests = [t for t in v.get("tests", []) if t["name"].startswith("test_gpu")]
    if want_gpu:
        check(v.get("mode") == "gpu" and v.get("env", {}).get("device", "").startswith("cuda"),
              f"{label}: mode gpu on a CUDA device ({v.get('env')})")
        check(bool(gpu_tests) and all(t["status"] == "pass" for t in gpu_tests),
              f"{label}: the GPU-only tests ran and passed: {[(t['name'], t['status']) for t in gpu_tests]}")
    if v.get("metrics"):
        print(f"    metrics: {v['metrics']}")
    w = judge(executor, slot, mutant.read_text(), exercise)
    check(w["status"] == "wrong_answer", f"{label}: the mutant {mutant.name} gets wrong_answer")


def timing(iters: int) -> None:
    import torch

    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "tools" / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    from minisgl.testing import tiny_model

    print("\n== decode step of the tiny Qwen3 (float32): eager vs CUDA graph replay")
    print(f"{'bs':>4} {'eager ms':>10} {'graph ms':>10} {'speedup':>8}")
    for bs, e, g in gpu_check.time_decode(tiny_model("qwen3"), torch.float32, [1, 8], iters=iters):
        print(f"{bs:>4} {e:>10.3f} {g:>10.3f} {e / g:>7.2f}x")
        check(g > 0 and e > 0, f"timed bs={bs}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exercise", default="graph-capture-loop")
    ap.add_argument("--mutant", default="no_warm_up")
    ap.add_argument("--docker", metavar="IMAGE", help="also judge through the docker executor with this image")
    ap.add_argument("--allow-cpu", action="store_true", help="rehearse on a CPU (judged in mode local)")
    ap.add_argument("--iters", type=int, default=100)
    args = ap.parse_args()
    t0 = time.perf_counter()
    print("== the machine")
    smi = shutil.which("nvidia-smi")
    if smi:
        print(subprocess.run([smi, "--query-gpu=index,name,driver_version,memory.total", "--format=csv"],
                             capture_output=True, text=True).stdout.strip())
    import torch

    cuda = torch.cuda.is_available()
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, available: {cuda}"
          + (f", {torch.cuda.get_device_name(0)}" if cuda else ""))
    print(f"flashinfer: {'installed' if importlib.util.find_spec('flashinfer') else 'not installed'}")
    if not cuda and not args.allow_cpu:
        print("no CUDA device: nothing to check here (--allow-cpu rehearses the script on a CPU)")
        return 2
    slot = Slot("gpu0", gpu_id="0", gpu_name=torch.cuda.get_device_name(0)) if cuda else Slot("cpu0")
    mutant = ROOT / "exercises" / args.exercise / "mutants" / f"{args.mutant}.py"
    with tempfile.TemporaryDirectory(prefix="gpu-runner-check-") as work:
        host = HostSides(work_dir=work, emulate_gpu=not cuda)
        host.prepare()
        check_judging(host, slot, args.exercise, mutant, cuda, "job path (runner.job sides on this host)")
        if args.docker:
            docker = DockerExecutor(image=args.docker, work_dir=str(Path(work) / "docker"), owner="gpu-check",
                                    emulate_gpu=not cuda, memory_mb=16384, cpus=4.0)
            docker.prepare()
            check_judging(docker, slot, args.exercise, mutant, cuda, f"docker executor ({args.docker})")
    if cuda:
        timing(args.iters)
    print(f"\n{'all checks passed' if not FAILED else f'{len(FAILED)} check(s) FAILED'} "
          f"in {time.perf_counter() - t0:.0f} s")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

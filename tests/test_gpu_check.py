"""tools/gpu_check.py runs on a CPU too (EmulatedGraph, small shapes), so CI keeps it from rotting."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_check_runs_and_passes_on_this_machine():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_check.py"), "--quick"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks passed" in r.stdout
    assert r.stdout.count("[ok]") >= 20 and "FAIL" not in r.stdout
    kernels = r.stdout[r.stdout.index("== Triton kernels"):]
    assert kernels.startswith("== Triton kernels (interpreter, cpu)") and kernels.count("[ok]") >= 3, kernels[:400]
    moe = r.stdout[r.stdout.index("== MoE, Triton grouped GEMM (interpreter)"):]
    assert moe.count("[ok]") >= 3 and "== TP=2: not run (fewer than two GPUs)" in r.stdout, moe[:600]

"""``python -m runner --server URL --token T [--executor docker|local] ...``: a grading runner.

The token comes from ``--token``, ``--token-file`` or ``MINISGL_RUNNER_TOKEN`` (prefer the last two: a
command line is visible to every user of the machine). Slots: one per GPU (``--gpus auto``, the default,
asks ``nvidia-smi``), else ``--slots`` CPU slots.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import socket
import subprocess
import sys

from .client import ServerClient
from .executors import Slot, make_executor
from .service import Service


def detect_gpus() -> list[tuple[str, str]]:
    """(index, name) of each NVIDIA GPU, from nvidia-smi; [] without one."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return []
    rows = [line.split(",", 1) for line in out.splitlines() if "," in line]
    return [(i.strip(), n.strip()) for i, n in rows]


def make_slots(gpus: str, n_cpu: int) -> list[Slot]:
    if gpus == "none":
        found: list[tuple[str, str]] = []
    elif gpus == "auto":
        found = detect_gpus()
    else:
        names = dict(detect_gpus())
        found = [(i.strip(), names.get(i.strip(), f"GPU {i.strip()}")) for i in gpus.split(",") if i.strip()]
    if found:
        return [Slot(name=f"gpu{i}", gpu_id=i, gpu_name=name) for i, name in found]
    return [Slot(name=f"cpu{k}") for k in range(max(1, n_cpu))]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m runner", description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="the site's address, e.g. https://practice.example.edu")
    ap.add_argument("--token", help="this runner's token (flask --app web runners add NAME)")
    ap.add_argument("--token-file", help="a file holding the token")
    ap.add_argument("--executor", default=os.environ.get("MINISGL_RUNNER_EXECUTOR", "docker"),
                    help="docker (default), local (a subprocess; development), or module:Class")
    ap.add_argument("--image", default=os.environ.get("MINISGL_RUNNER_IMAGE", "minisgl-job:gpu"),
                    help="the job image (docker executor)")
    ap.add_argument("--work-dir", default=os.environ.get("MINISGL_RUNNER_WORK_DIR", "/var/lib/minisgl-runner"),
                    help="where job folders are made; with the runner itself in a container, the same path on "
                    "the host and in the container")
    ap.add_argument("--gpus", default="auto", help="auto (nvidia-smi), none, or device ids: 0,1")
    ap.add_argument("--slots", type=int, default=1, help="CPU slots when there is no GPU")
    ap.add_argument("--emulate-gpu", action=argparse.BooleanOptionalAction, default=None,
                    help="take gpu-mode jobs on a slot without a GPU, judged with emulated CUDA graphs "
                    "(default: on for the local executor, off for docker)")
    ap.add_argument("--memory-mb", type=int, default=4096, help="memory per job (docker executor)")
    ap.add_argument("--cpus", type=float, default=1.0, help="CPUs per job (docker executor)")
    ap.add_argument("--claim-wait", type=float, default=10.0, help="long-poll seconds per claim")
    ap.add_argument("--grace", type=float, default=None, help="on SIGTERM, hand back jobs still running after "
                    "this many seconds (default: finish them)")
    ap.add_argument("--max-jobs", type=int, default=None, help="stop after this many jobs")
    ap.add_argument("--name", default=None, help="labels this runner's containers (default: the host name)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    token = args.token or os.environ.get("MINISGL_RUNNER_TOKEN")
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            token = f.read().strip()
    if not token:
        print("python -m runner: a token is needed (--token, --token-file or MINISGL_RUNNER_TOKEN)", file=sys.stderr)
        return 2
    os.environ.pop("MINISGL_RUNNER_TOKEN", None)  # nothing started from here inherits it
    emulate = args.emulate_gpu if args.emulate_gpu is not None else args.executor == "local"
    slots = make_slots(args.gpus, args.slots)
    kw = dict(emulate_gpu=emulate, memory_mb=args.memory_mb, cpus=args.cpus, work_dir=args.work_dir)
    if args.executor != "local":
        kw.update(image=args.image, owner=args.name or socket.gethostname())
    try:
        executor = make_executor(args.executor, **kw)
    except Exception as e:  # noqa: BLE001
        print(f"python -m runner: cannot set up the {args.executor} executor: {e}", file=sys.stderr)
        return 2
    service = Service(ServerClient(args.server, token), executor, slots, claim_wait=args.claim_wait,
                      grace_s=args.grace, max_jobs=args.max_jobs)
    service.install_signals()
    try:
        return service.run()
    except Exception as e:  # noqa: BLE001 - e.g. the image is missing: say so and exit non-zero
        print(f"python -m runner: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

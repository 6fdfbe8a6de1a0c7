"""minisgl serve against transformers serve on SmolLM2-135M-Instruct, through the benchmark client:

    python benchmarks/serving.py                         # both servers, both workloads (64 requests each)
    python benchmarks/serving.py --transformers-only --num-requests 8 --output-len 4-8   # a quick look

For each server and each workload the server is started afresh (a cold cache, no prefix left over from the
other workload), waited for (GET /health, else GET /v1/models), warmed up with one short request that is not
measured, sent the workload by minisgl/benchmark.py's client, then stopped with SIGTERM and waited for.

The two workloads are the same requests (one seed: prompts of 16-256 SmolLM2 tokens, outputs of 8-64, greedy):
Poisson arrivals at --rate requests per second, and all of them at once. Outputs must reach their length:
minisgl gets the `ignore_eos: true` extension; `transformers serve` rejects unknown fields (HTTP 422), so it
gets its own `generation_config` field with `eos_token_id: -1` instead (EOS never matches; max_tokens stops it).
`transformers serve --continuous-batching` is tried first; if it does not start or fails its warm-up, the
plain server is used and the report says so.

Servers run offline (HF_HUB_OFFLINE=1) from the local folder. Only the ratios within one run mean anything:
the machine is shared and noisy."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from minisgl import benchmark as bench  # noqa: E402
from minisgl.benchmark import BenchmarkRun, Length, WorkItem  # noqa: E402

MODEL = "models/SmolLM2-135M-Instruct"
START_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 60.0
WARMUP = WorkItem("The capital of France is", 5, 4, 0.0)
WARMUP_TRIES = 3
TRANSFORMERS_BODY = {"generation_config": json.dumps({"eos_token_id": -1})}


class ServerError(Exception):
    """A server did not start, did not answer or failed its warm-up."""


@dataclass
class ServerSpec:
    name: str
    command: list[str]
    model: str | None  # the id to send; None: the first of GET /v1/models
    ignore_eos: bool
    extra_body: dict[str, Any] | None = None
    note: str = ""


@dataclass
class Outcome:
    spec: ServerSpec
    runs: dict[str, BenchmarkRun] = field(default_factory=dict)  # workload name -> run
    errors: dict[str, str] = field(default_factory=dict)  # workload name -> why it has no run


# --------------------------------------------------------------------------------------------
# Servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def minisgl_spec(model: str, port: int) -> ServerSpec:
    return ServerSpec("minisgl", [sys.executable, "-m", "minisgl", "serve", "--model", model, "--port", str(port)],
                      model=None, ignore_eos=True)


def transformers_spec(model: str, port: int, continuous_batching: bool) -> ServerSpec:
    command = ["transformers", "serve", model, "--host", "127.0.0.1", "--port", str(port)]
    if continuous_batching:
        command.append("--continuous-batching")
    name = "transformers (CB)" if continuous_batching else "transformers"
    return ServerSpec(name, command, model=model, ignore_eos=False, extra_body=TRANSFORMERS_BODY)


def _get(url: str, timeout: float = 5.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return 0


def _log_tail(log: Path, lines: int = 15) -> str:
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join("    " + line for line in text[-lines:])


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = START_TIMEOUT_S) -> None:
    """Until GET /health (minisgl, transformers) or GET /v1/models answers 200; a server that exits is an error."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"exited with status {proc.returncode} before answering:\n{_log_tail(log)}")
        if _get(url + "/health") == 200 or _get(url + "/v1/models") == 200:
            return
        time.sleep(1.0)
    raise ServerError(f"did not answer GET {url}/health or /v1/models within {timeout_s:.0f} s:\n{_log_tail(log)}")


def stop_server(proc: subprocess.Popen) -> None:
    """SIGTERM, then wait; a server still there after STOP_TIMEOUT_S is killed with its process group."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"  server {proc.pid} ignored SIGTERM for {STOP_TIMEOUT_S:.0f} s: killing it", file=sys.stderr)
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the server and what it started
        proc.wait()


def start_server(spec: ServerSpec, log: Path) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(log, "wb") as out:
        return subprocess.Popen(spec.command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)


# --------------------------------------------------------------------------------------------
# Measuring


async def _measure(url: str, spec: ServerSpec, workload: list[WorkItem], progress: bool) -> BenchmarkRun:
    client = bench.make_client(url)
    try:
        model = await bench.resolve_model(url, spec.model)
        for attempt in range(WARMUP_TRIES):  # a server may answer /health before it can generate
            warm = await bench.send_request(client, model, -1, WARMUP, ignore_eos=spec.ignore_eos,
                                            extra_body=spec.extra_body)
            if warm.ok:
                break
            if attempt + 1 == WARMUP_TRIES:
                raise ServerError(f"warm-up request failed {WARMUP_TRIES} times: {warm.error}")
            await asyncio.sleep(2.0)
        results, duration = await bench.run_workload(client, model, workload, ignore_eos=spec.ignore_eos,
                                                     extra_body=spec.extra_body, progress=progress)
    except bench.BenchmarkError as e:
        raise ServerError(str(e)) from None
    finally:
        await client.close()
    return BenchmarkRun(model, results, duration, bench.summarize(results, duration))


def serve_and_measure(spec: ServerSpec, port: int, workload: list[WorkItem], progress: bool) -> BenchmarkRun:
    """Start the server, wait for it, warm it up, run the workload, stop it (always)."""
    url = f"http://127.0.0.1:{port}"
    log = Path(tempfile.gettempdir()) / f"serving-{spec.name.split()[0]}-{port}.log"
    print(f"  starting {' '.join(spec.command)} (log {log})", file=sys.stderr)
    t0 = time.monotonic()
    proc = start_server(spec, log)
    try:
        wait_ready(url, proc, log)
        print(f"  ready after {time.monotonic() - t0:.1f} s", file=sys.stderr)
        return asyncio.run(_measure(url, spec, workload, progress))
    finally:
        stop_server(proc)


def run_server(make_spec: Callable[[int], ServerSpec], workloads: dict[str, list[WorkItem]], progress: bool) -> Outcome:
    """Each workload against a fresh server of `make_spec(port)`."""
    outcome: Outcome | None = None
    for name, workload in workloads.items():
        port = free_port()
        spec = make_spec(port)
        outcome = outcome or Outcome(spec)
        print(f"{spec.name}, {name}:", file=sys.stderr)
        try:
            outcome.runs[name] = serve_and_measure(spec, port, workload, progress)
        except ServerError as e:
            outcome.errors[name] = str(e)
            print(f"  {spec.name} failed: {e}", file=sys.stderr)
    assert outcome is not None
    return outcome


def run_transformers(model: str, workloads: dict[str, list[WorkItem]], progress: bool) -> Outcome:
    """transformers serve --continuous-batching; without it, saying so, for a workload where it failed."""
    cb = run_server(lambda port: transformers_spec(model, port, True), workloads, progress)
    failed = [name for name in workloads if name in cb.errors]
    if not failed:
        return cb
    plain = run_server(lambda port: transformers_spec(model, port, False), {n: workloads[n] for n in failed},
                       progress)
    for name in failed:
        why = cb.errors[name].splitlines()[0][:160]
        if name in plain.runs:
            cb.runs[name] = plain.runs[name]
            del cb.errors[name]
            cb.spec.note += f"{name}: ran without --continuous-batching, which failed ({why}). "
        else:
            cb.errors[name] = f"with --continuous-batching: {why}; without: {plain.errors[name].splitlines()[0]}"
    if len(failed) == len(workloads):
        cb.spec.name = "transformers"
    elif any(name in plain.runs for name in failed):
        cb.spec.name = "transformers (mixed)"
    return cb


# --------------------------------------------------------------------------------------------
# The report


ROWS = [  # label, summary path, digits, whether the ratio is printed
    ("output tok/s", ("output_throughput",), 2, True),
    ("requests/s", ("request_throughput",), 3, False),
    ("TTFT p50 (ms)", ("ttft_ms", "p50"), 1, True),
    ("TTFT p90 (ms)", ("ttft_ms", "p90"), 1, True),
    ("ITL p50 (ms)", ("itl_ms", "p50"), 1, False),
    ("ITL p90 (ms)", ("itl_ms", "p90"), 1, True),
    ("TPOT mean (ms)", ("tpot_ms", "mean"), 1, False),
    ("E2E p90 (ms)", ("e2e_ms", "p90"), 1, False),
    ("duration (s)", ("duration_s",), 1, False),
    ("failed", ("failed",), 0, False),
    ("short outputs", ("short_outputs",), 0, False),
]


def _value(run: BenchmarkRun | None, path: tuple[str, ...]) -> float | None:
    if run is None:
        return None
    value: Any = run.summary
    for key in path:
        value = value[key]
    return value


def _cell(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def side_by_side(title: str, columns: list[tuple[str, BenchmarkRun | None]]) -> str:
    """A row per figure, a column per server; with two servers, the ratio first / second where it is marked."""
    ratio = len(columns) == 2
    lines = [title, f"  {'':<16}" + "".join(f"{name:>20}" for name, _ in columns) + (f"{'ratio':>10}" if ratio else "")]
    for label, path, digits, marked in ROWS:
        values = [_value(run, path) for _, run in columns]
        line = f"  {label:<16}" + "".join(f"{_cell(v, digits):>20}" for v in values)
        if ratio and marked and values[0] is not None and values[1]:
            line += f"{values[0] / values[1]:>10.2f}"
        lines.append(line)
    return "\n".join(lines)


def offered_load(workload: list[WorkItem]) -> str:
    span = workload[-1].arrival_s if workload else 0.0
    if span <= 0:
        return "all at once"
    return f"{len(workload) / span:.2f} req/s, {sum(w.output_len for w in workload) / span:.1f} output tok/s offered"


def kept_up(run: BenchmarkRun | None, workload: list[WorkItem]) -> str:
    """Whether the server finished close to the last arrival (a Poisson workload it keeps up with)."""
    if run is None or not workload or workload[-1].arrival_s <= 0:
        return ""
    late = run.duration_s - workload[-1].arrival_s
    return f"finished {late:.1f} s after the last arrival" + (" (did NOT keep up)" if late > 0.25 * run.duration_s
                                                               else "")


# --------------------------------------------------------------------------------------------
# The command


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=MODEL, help=f"local model folder (default {MODEL})")
    ap.add_argument("--num-requests", type=bench.parse_positive_int, default=64, help="requests per workload (64)")
    ap.add_argument("--rate", type=bench.parse_rate, default=0.1,
                    help="requests per second of the Poisson workload (default 0.1: transformers serve on a "
                         "2-core CPU manages about 5 output tok/s)")
    ap.add_argument("--input-len", type=bench.parse_length, default=Length(16, 256), help="prompt tokens (16-256)")
    ap.add_argument("--output-len", type=bench.parse_length, default=Length(8, 64), help="output tokens (8-64)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workloads", choices=["both", "poisson", "burst"], default="both")
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--minisgl-only", action="store_true")
    only.add_argument("--transformers-only", action="store_true")
    ap.add_argument("--out", default=None, help="write every run's summary as JSON to this file")
    ap.add_argument("--no-progress", dest="progress", action="store_false")
    return ap.parse_args(argv)


def make_workloads(args: argparse.Namespace) -> dict[str, list[WorkItem]]:
    tok = bench.default_tokenizer(None, args.model)
    names = ["poisson", "burst"] if args.workloads == "both" else [args.workloads]
    rates = {"poisson": args.rate, "burst": math.inf}
    return {name: bench.make_workload(args.num_requests, args.input_len, args.output_len, rates[name], args.seed, tok)
            for name in names}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not Path(args.model).is_dir():
        print(f"error: model folder not found: {args.model}", file=sys.stderr)
        return 2
    workloads = make_workloads(args)
    titles = {"poisson": f"Poisson at {args.rate:g} req/s", "burst": "all at once"}
    print(f"{args.num_requests} requests per workload, input {args.input_len}, output {args.output_len} tokens, "
          f"seed {args.seed}", file=sys.stderr)
    ours = None if args.transformers_only else run_server(lambda p: minisgl_spec(args.model, p), workloads,
                                                           args.progress)
    theirs = None if args.minisgl_only else run_transformers(args.model, workloads, args.progress)

    ran = [o for o in (ours, theirs) if o is not None]
    print(f"\n{' vs '.join(o.spec.name for o in ran)} serve, {args.model}: {args.num_requests} requests, input "
          f"{args.input_len}, output {args.output_len} tokens, seed {args.seed}"
          + ("; ratio = minisgl / transformers" if len(ran) == 2 else ""))
    for name, workload in workloads.items():
        columns = [(o.spec.name, o.runs.get(name)) for o in ran]
        print()
        print(side_by_side(f"{titles[name]} ({offered_load(workload)})", columns))
        for outcome, (label, run) in zip(ran, columns):
            if name in outcome.errors:
                print(f"  {label}: no run: {outcome.errors[name].splitlines()[0]}")
            elif kept_up(run, workload):
                print(f"  {label}: {kept_up(run, workload)}")
    if theirs is not None and theirs.spec.note:
        print(f"\nnote: {theirs.spec.note.strip()}")
    if args.out:
        data = {"args": bench.jsonable(vars(args)),
                "servers": {o.spec.name: {"command": o.spec.command, "note": o.spec.note, "errors": o.errors,
                                          "summaries": {n: bench.jsonable(r.summary) for n, r in o.runs.items()}}
                            for o in ran}}
        Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all(o.runs for o in ran) else 1


if __name__ == "__main__":
    sys.exit(main())

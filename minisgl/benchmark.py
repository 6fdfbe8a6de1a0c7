"""python -m minisgl bench --url URL ... : benchmark any OpenAI-compatible server with streaming requests.

The workload is drawn from a seed (the same seed gives the same prompts, lengths and arrival times):
prompts are cut from minisgl/data/corpus.txt to an exact number of tokens of a local tokenizer (or of
whitespace-separated words when there is none), output lengths are sent as max_tokens, and requests arrive
as a Poisson process of --rate requests per second (exponential gaps), or all at once for --rate inf.
With --endpoint chat the prompt is one user message: the server's chat template adds its own tokens
(its usage.prompt_tokens, shown as "server-counted prompt tokens", includes them).

What is measured, per request, with the client's monotonic clock:
- TTFT: from just before the request is sent to the first streamed chunk whose text is non-empty;
- ITL: the gaps between successive chunks with non-empty text. A chunk counts as one token, unless the
  server streams a running usage.completion_tokens in its chunks: then a gap is split evenly over the
  tokens the chunk carries;
- TPOT: (E2E - TTFT) / (output tokens - 1), the mean decode time per token of the request;
- E2E: from the send to the end of the stream;
- output tokens: usage.completion_tokens of the last chunk that carries usage, else the number of chunks
  with non-empty text.
With --concurrency, a request that has arrived waits for a free slot: its times start when it is sent.
A failed request is counted and its error kept; it does not stop the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

CORPUS_PATH = Path(__file__).resolve().parent / "data" / "corpus.txt"
ENDPOINTS = ("completions", "chat")
REQUEST_TIMEOUT_S = 3600.0  # one request may wait long behind many others
MODELS_TIMEOUT_S = 30.0
_ADJUST_TRIES = 6  # re-encode passes to hit an exact prompt length from one start
_START_TRIES = 64  # starts to try before giving up on a prompt length
_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.model", "vocab.json")  # what AutoTokenizer may load


class BenchmarkError(Exception):
    """A problem that ends the run with one line on stderr and exit status 2."""


# --------------------------------------------------------------------------------------------
# Arguments


@dataclass(frozen=True)
class Length:
    """A length distribution: `lo` == `hi` is fixed, else uniform over the integers lo..hi (inclusive)."""

    lo: int
    hi: int

    def draw(self, rng: random.Random) -> int:
        return self.lo if self.lo == self.hi else rng.randint(self.lo, self.hi)

    def __str__(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


def parse_length(text: str) -> Length:
    """`N` (fixed) or `A-B` (uniform integers, inclusive), all >= 1; an argparse type."""
    parts = text.strip().split("-")
    try:
        if len(parts) not in (1, 2):
            raise ValueError
        lo, hi = int(parts[0]), int(parts[-1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid length {text!r}: expected N or A-B (integers)") from None
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError(f"invalid length {text!r}: expected 1 <= N, or 1 <= A <= B")
    return Length(lo, hi)


def parse_rate(text: str) -> float:
    """Requests per second, > 0; `inf` sends them all at once. An argparse type."""
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid rate {text!r}: expected a number > 0 or inf") from None
    if not rate > 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"invalid rate {text!r}: expected a number > 0 or inf")
    return rate


def parse_positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected an integer >= 1")
    return value


def parse_json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"invalid JSON {text!r}: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected a JSON object")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `python -m minisgl bench`."""
    parser.add_argument("--url", required=True, help="base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:1919")
    parser.add_argument("--model", default=None, help="model id to send (default: the first id of GET /v1/models)")
    parser.add_argument("--num-requests", type=parse_positive_int, default=64, help="number of requests (default 64)")
    parser.add_argument("--rate", type=parse_rate, default=math.inf,
                        help="requests per second, Poisson arrivals; inf sends all at once (default inf)")
    parser.add_argument("--input-len", type=parse_length, default=Length(128, 128),
                        help="prompt tokens: N or A-B, uniform inclusive (default 128)")
    parser.add_argument("--output-len", type=parse_length, default=Length(64, 64),
                        help="output tokens (max_tokens): N or A-B, uniform inclusive (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of prompts, lengths and arrivals (default 0)")
    parser.add_argument("--tokenizer", default=None,
                        help="local tokenizer folder for prompts of exact token lengths (default: the model id "
                             "when it is a local folder, else whitespace words stand for tokens)")
    parser.add_argument("--endpoint", choices=ENDPOINTS, default="completions",
                        help="/v1/completions (prompt) or /v1/chat/completions (one user message); default completions")
    parser.add_argument("--ignore-eos", action=argparse.BooleanOptionalAction, default=True,
                        help="send the ignore_eos: true extension so that outputs reach their length (default on)")
    parser.add_argument("--extra-body", type=parse_json_object, default=None,
                        help="a JSON object merged into every request body (server-specific fields)")
    parser.add_argument("--concurrency", type=parse_positive_int, default=None,
                        help="most requests in flight at once (default unlimited)")
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar on stderr")


# --------------------------------------------------------------------------------------------
# Tokenizers (for prompt lengths only)


class Tokenizer(Protocol):
    name: str

    def encode(self, text: str) -> list[Any]: ...

    def decode(self, ids: Sequence[Any]) -> str: ...


class WordTokenizer:
    """Whitespace-separated words stand for tokens (no tokenizer at hand)."""

    name = "words"

    def encode(self, text: str) -> list[str]:
        return text.split()

    def decode(self, ids: Sequence[str]) -> str:
        return " ".join(ids)


class HFTokenizer:
    """A folder's tokenizer.json through `tokenizers` (special tokens as the tokenizer adds them, like
    `AutoTokenizer.encode`), else `transformers.AutoTokenizer` from the folder only."""

    def __init__(self, path: str | Path):
        folder = Path(path)
        self.name = str(path)
        if not folder.is_dir():
            raise BenchmarkError(f"tokenizer folder not found: {path}")
        if (folder / "tokenizer.json").is_file():
            from tokenizers import Tokenizer as FastTokenizer

            fast = FastTokenizer.from_file(str(folder / "tokenizer.json"))
            self._encode = lambda text: fast.encode(text).ids
            self._decode = lambda ids: fast.decode(list(ids), skip_special_tokens=False)
            return
        if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
            raise BenchmarkError(f"no tokenizer in {path} (none of tokenizer.json, {', '.join(_TOKENIZER_FILES)})")
        try:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except Exception as e:  # noqa: BLE001 - any failure means no usable tokenizer in that folder
            raise BenchmarkError(f"cannot load a tokenizer from {path}: {e}") from None
        self._encode = lambda text: tok.encode(text)
        self._decode = lambda ids: tok.decode(list(ids))

    def encode(self, text: str) -> list[int]:
        return self._encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return self._decode(ids)


def default_tokenizer(tokenizer: str | None, model: str) -> Tokenizer:
    """--tokenizer when given (it must load), else the model id when it is a local folder that has one, else words."""
    if tokenizer is not None:
        return HFTokenizer(tokenizer)
    if Path(model).is_dir():
        try:
            return HFTokenizer(model)
        except BenchmarkError as e:
            print(f"note: {e}; whitespace words stand for tokens", file=sys.stderr)
    return WordTokenizer()


# --------------------------------------------------------------------------------------------
# The workload


class WorkItem(NamedTuple):
    prompt: str
    input_len: int
    output_len: int
    arrival_s: float  # seconds after the start of the run


def corpus_text() -> str:
    """The prose of minisgl/data/corpus.txt without its comment lines."""
    lines = CORPUS_PATH.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.startswith("#")).strip()


def arrival_times(n: int, rate: float, rng: random.Random) -> list[float]:
    """Poisson arrivals: the first at 0, then exponential gaps of mean 1/rate; all 0 for an infinite rate."""
    if math.isinf(rate):
        return [0.0] * n
    times, t = [], 0.0
    for _ in range(n):
        times.append(t)
        t += rng.expovariate(rate)
    return times


def exact_prompt(tok: Tokenizer, source: Sequence[Any], start: int, n: int) -> str | None:
    """Text from source[start:] that re-encodes to exactly n tokens, or None: decode a slice, re-encode it,
    and grow or shrink the slice by the difference (merges across the cut move the count a little)."""
    k = n
    for _ in range(_ADJUST_TRIES):
        if k < 1 or start + k > len(source):
            return None
        text = tok.decode(source[start : start + k])
        m = len(tok.encode(text))
        if m == n:
            return text
        k += n - m
    return None


def make_prompts(lengths: Sequence[int], tok: Tokenizer, rng: random.Random) -> list[str]:
    """One prompt per length, each of exactly that many tokens of `tok`, cut from the corpus at distinct
    random places (so that prompts share no long prefix)."""
    if not lengths:
        return []
    ids = tok.encode(corpus_text())
    span = len(ids)
    reps = 2 + max(lengths) // span
    source = list(ids) * reps  # the corpus again after itself, for slices past its end
    starts = rng.sample(range(span), len(lengths)) if len(lengths) <= span else [rng.randrange(span) for _ in lengths]
    prompts = []
    for n, start in zip(lengths, starts):
        text = exact_prompt(tok, source, start, n)
        tries = 1
        while text is None and tries < _START_TRIES:
            text = exact_prompt(tok, source, rng.randrange(span), n)
            tries += 1
        if text is None:
            raise BenchmarkError(f"cannot make a prompt of exactly {n} tokens with tokenizer {tok.name}")
        prompts.append(text)
    return prompts


def make_workload(num_requests: int, input_len: Length | int, output_len: Length | int, rate: float = math.inf,
                  seed: int = 0, tokenizer: Tokenizer | None = None) -> list[WorkItem]:
    """The requests of a run: (prompt, input_len, output_len, arrival_s), the same for the same arguments.
    Input lengths, output lengths, prompt places and arrivals each have their own generator derived from
    the seed, so that changing the rate does not change the prompts, for example. An int length is fixed."""
    tok = tokenizer if tokenizer is not None else WordTokenizer()
    input_len = Length(input_len, input_len) if isinstance(input_len, int) else input_len
    output_len = Length(output_len, output_len) if isinstance(output_len, int) else output_len
    rngs = {part: random.Random(f"minisgl-bench:{seed}:{part}") for part in ("input", "output", "prompt", "arrival")}
    inputs = [input_len.draw(rngs["input"]) for _ in range(num_requests)]
    outputs = [output_len.draw(rngs["output"]) for _ in range(num_requests)]
    prompts = make_prompts(inputs, tok, rngs["prompt"])
    arrivals = arrival_times(num_requests, rate, rngs["arrival"])
    return [WorkItem(*item) for item in zip(prompts, inputs, outputs, arrivals)]


# --------------------------------------------------------------------------------------------
# Sending


@dataclass
class RequestResult:
    index: int
    input_len: int
    output_len: int  # requested (max_tokens)
    arrival_s: float
    sent_s: float | None = None  # when it was sent, after the start of the run
    ok: bool = False
    error: str | None = None
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    e2e_s: float | None = None
    output_tokens: int = 0
    prompt_tokens: int | None = None  # as the server counted them (usage), when it says
    chunks: int = 0  # chunks with non-empty text
    finish_reason: str | None = None

    @property
    def tpot_s(self) -> float | None:
        if not self.ok or self.ttft_s is None or self.e2e_s is None or self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)


BodyFn = Callable[[WorkItem], dict[str, Any]]


def request_body(item: WorkItem, ignore_eos: bool, extra_body: dict[str, Any] | BodyFn | None) -> dict[str, Any]:
    """The fields outside the OpenAI schema sent with a request."""
    body: dict[str, Any] = {"ignore_eos": True} if ignore_eos else {}
    if callable(extra_body):
        body.update(extra_body(item))
    elif extra_body:
        body.update(extra_body)
    return body


def _chunk_text_and_finish(chunk: Any, endpoint: str) -> tuple[str, str | None]:
    if not chunk.choices:
        return "", None
    choice = chunk.choices[0]
    text = (choice.delta.content if choice.delta is not None else None) if endpoint == "chat" else choice.text
    return text or "", choice.finish_reason


def _error_text(e: BaseException) -> str:
    """One line: the exception, and the body of an HTTP error (the server's reason)."""
    body = getattr(e, "body", None)
    text = f"{type(e).__name__}: {e}"
    if body is not None and str(body) not in str(e):
        text += f" {json.dumps(body, default=str)}"
    if e.__cause__ is not None:  # e.g. what is behind openai's "Connection error."
        text += f" (from {type(e.__cause__).__name__}: {e.__cause__})"
    text = text.replace("\n", " ")
    return text if len(text) <= 500 else text[:497] + "..."


async def send_request(client: Any, model: str, index: int, item: WorkItem, *, endpoint: str = "completions",
                       ignore_eos: bool = True, extra_body: dict[str, Any] | BodyFn | None = None,
                       t_start: float | None = None) -> RequestResult:
    """Send one streaming request and time it; any failure is kept in the result, never raised."""
    result = RequestResult(index, item.input_len, item.output_len, item.arrival_s)
    common = dict(model=model, max_tokens=item.output_len, temperature=0.0, stream=True,
                  stream_options={"include_usage": True}, extra_body=request_body(item, ignore_eos, extra_body) or None)
    t0 = time.perf_counter()
    result.sent_s = t0 - t_start if t_start is not None else 0.0
    last: float | None = None
    running_usage = False  # whether usage came with an earlier chunk (a running count), not only at the end
    usage_tokens: int | None = None
    stream = None
    try:
        if endpoint == "chat":
            stream = await client.chat.completions.create(messages=[{"role": "user", "content": item.prompt}], **common)
        else:
            stream = await client.completions.create(prompt=item.prompt, **common)
        async for chunk in stream:
            now = time.perf_counter()
            text, finish = _chunk_text_and_finish(chunk, endpoint)
            result.finish_reason = finish or result.finish_reason
            usage = getattr(chunk, "usage", None)
            count = getattr(usage, "completion_tokens", None) if usage is not None else None
            if text:
                carried = 1
                if running_usage and count is not None and usage_tokens is not None and count > usage_tokens:
                    carried = count - usage_tokens
                if last is None:
                    result.ttft_s = now - t0
                else:
                    result.itl_s.extend([(now - last) / carried] * carried)
                last = now
                result.chunks += 1
            if count is not None:
                running_usage = running_usage or bool(text)
                usage_tokens = count
                result.prompt_tokens = getattr(usage, "prompt_tokens", None)
        result.e2e_s = time.perf_counter() - t0
        result.output_tokens = usage_tokens if usage_tokens is not None else result.chunks
        result.ok = True
    except Exception as e:  # noqa: BLE001 - a failed request is a result, not the end of the run
        result.error = _error_text(e)
    finally:
        if stream is not None:
            try:
                await stream.close()
            except Exception:  # noqa: BLE001 - closing a broken stream may fail again
                pass
    return result


def make_client(url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> Any:
    """The official AsyncOpenAI client for URL/v1, without retries."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(api_key="none", base_url=url.rstrip("/") + "/v1", timeout=timeout_s, max_retries=0)


async def resolve_model(url: str, model: str | None) -> str:
    """`model`, else the first id of GET /v1/models; an unreachable server is a BenchmarkError either way.
    It asks with a client of its own: after an error answer (transformers serve's /v1/models is HTTP 500
    offline) the next request on the same kept-alive connection can fail with a connection error."""
    import openai

    client = make_client(url, MODELS_TIMEOUT_S)
    try:
        page = await client.models.list()
    except openai.APIConnectionError as e:
        raise BenchmarkError(f"cannot reach the server at {url} ({_error_text(e)})") from None
    except openai.APIStatusError as e:
        if model is not None:
            return model
        raise BenchmarkError(f"GET {url}/v1/models answered HTTP {e.status_code}: pass --model") from None
    finally:
        await client.close()
    if model is not None:
        return model
    ids = [m.id for m in page.data]
    if not ids:
        raise BenchmarkError(f"GET {url}/v1/models lists no model: pass --model")
    return ids[0]


async def run_workload(client: Any, model: str, workload: Sequence[WorkItem], *, endpoint: str = "completions",
                       ignore_eos: bool = True, extra_body: dict[str, Any] | BodyFn | None = None,
                       concurrency: int | None = None, progress: bool = True) -> tuple[list[RequestResult], float]:
    """Send every request at its arrival time (or when a slot frees, with `concurrency`); the results in
    workload order and the duration from the start to the last answer."""
    from tqdm import tqdm

    slots = asyncio.Semaphore(concurrency) if concurrency else None
    bar = tqdm(total=len(workload), file=sys.stderr, disable=not progress, unit="req", desc="requests",
               dynamic_ncols=True)
    failed = 0
    t_start = time.perf_counter()

    async def one(index: int, item: WorkItem) -> RequestResult:
        nonlocal failed
        delay = t_start + item.arrival_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        kwargs = dict(endpoint=endpoint, ignore_eos=ignore_eos, extra_body=extra_body, t_start=t_start)
        if slots is None:
            result = await send_request(client, model, index, item, **kwargs)
        else:
            async with slots:
                result = await send_request(client, model, index, item, **kwargs)
        failed += not result.ok
        if failed:
            bar.set_postfix(failed=failed, refresh=False)
        bar.update(1)
        return result

    try:
        results = await asyncio.gather(*(one(i, item) for i, item in enumerate(workload)))
    finally:
        bar.close()
    return list(results), time.perf_counter() - t_start


@dataclass
class BenchmarkRun:
    model: str
    results: list[RequestResult]
    duration_s: float
    summary: dict[str, Any]


async def run_benchmark_async(url: str, workload: Sequence[WorkItem], *, model: str | None = None,
                              endpoint: str = "completions", ignore_eos: bool = True,
                              extra_body: dict[str, Any] | BodyFn | None = None, concurrency: int | None = None,
                              progress: bool = True) -> BenchmarkRun:
    client = make_client(url)
    try:
        model = await resolve_model(url, model)
        results, duration = await run_workload(client, model, workload, endpoint=endpoint, ignore_eos=ignore_eos,
                                               extra_body=extra_body, concurrency=concurrency, progress=progress)
    finally:
        await client.close()
    return BenchmarkRun(model, results, duration, summarize(results, duration))


def run_benchmark(url: str, workload: Sequence[WorkItem], **kwargs: Any) -> BenchmarkRun:
    """Run a workload against the server at `url` (see run_benchmark_async for the options)."""
    return asyncio.run(run_benchmark_async(url, workload, **kwargs))


# --------------------------------------------------------------------------------------------
# Statistics


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), interpolated linearly between the closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not within 0..100")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def describe_ms(values_s: Sequence[float]) -> dict[str, float | None]:
    """mean, p50, p90, p99 of seconds, in milliseconds (None for no values)."""
    if not values_s:
        return {"mean": None, "p50": None, "p90": None, "p99": None}
    ms = [v * 1000 for v in values_s]
    return {"mean": sum(ms) / len(ms), "p50": percentile(ms, 50), "p90": percentile(ms, 90), "p99": percentile(ms, 99)}


def summarize(results: Sequence[RequestResult], duration_s: float) -> dict[str, Any]:
    """The figures of a run. Throughputs count completed requests over the whole duration."""
    ok = [r for r in results if r.ok]
    out_tokens = sum(r.output_tokens for r in ok)
    reported = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
    errors = Counter(r.error for r in results if not r.ok)
    per_s = (lambda x: x / duration_s) if duration_s > 0 else (lambda x: 0.0)
    return {
        "requests": len(results),
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "errors": [{"error": e, "count": c} for e, c in errors.most_common(10)],
        "duration_s": duration_s,
        "request_throughput": per_s(len(ok)),
        "output_throughput": per_s(out_tokens),
        "total_input_tokens": sum(r.input_len for r in ok),
        "total_output_tokens": out_tokens,
        "server_prompt_tokens": sum(reported) if ok and len(reported) == len(ok) else None,
        "requested_output_tokens": sum(r.output_len for r in ok),
        "short_outputs": sum(r.output_tokens < r.output_len for r in ok),
        "ttft_ms": describe_ms([r.ttft_s for r in ok if r.ttft_s is not None]),
        "itl_ms": describe_ms([gap for r in ok for gap in r.itl_s]),
        "tpot_ms": describe_ms([t for r in ok if (t := r.tpot_s) is not None]),
        "e2e_ms": describe_ms([r.e2e_s for r in ok if r.e2e_s is not None]),
    }


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_table(summary: dict[str, Any], title: str = "Serving benchmark") -> str:
    rows = [
        ("Completed requests", str(summary["completed"])),
        ("Failed requests", str(summary["failed"])),
        ("Duration (s)", _fmt(summary["duration_s"])),
        ("Total input tokens", str(summary["total_input_tokens"])),
        ("Total output tokens", f"{summary['total_output_tokens']} of {summary['requested_output_tokens']} asked"
                                f" ({summary['short_outputs']} requests short)"),
        ("Request throughput (req/s)", _fmt(summary["request_throughput"])),
        ("Output token throughput (tok/s)", _fmt(summary["output_throughput"])),
    ]
    if summary["server_prompt_tokens"] is not None:
        rows.insert(4, ("Server-counted prompt tokens", str(summary["server_prompt_tokens"])))
    width = 36
    lines = [f"{' ' + title + ' ':=^{width + 32}}"]
    lines += [f"{name + ':':<{width}}{value}" for name, value in rows]
    lines.append(f"{'latency (ms)':<{width - 8}}" + "".join(f"{k:>10}" for k in ("mean", "p50", "p90", "p99")))
    for key, name in (("ttft_ms", "TTFT"), ("itl_ms", "ITL"), ("tpot_ms", "TPOT"), ("e2e_ms", "E2E")):
        s = summary[key]
        lines.append(f"{name:<{width - 8}}" + "".join(f"{_fmt(s[k], 1):>10}" for k in ("mean", "p50", "p90", "p99")))
    for err in summary["errors"]:
        lines.append(f"error x{err['count']}: {err['error']}")
    lines.append("=" * (width + 32))
    return "\n".join(lines)


def jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if isinstance(value, Length):
        return str(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # e.g. a function set as a parser default


def results_json(args: dict[str, Any], run: BenchmarkRun, tokenizer: str) -> dict[str, Any]:
    return jsonable({
        "args": args,
        "seed": args.get("seed"),
        "model": run.model,
        "tokenizer": tokenizer,
        "summary": run.summary,
        "requests": [{**asdict(r), "tpot_s": r.tpot_s} for r in run.results],
    })


# --------------------------------------------------------------------------------------------
# The command


async def _main(args: argparse.Namespace) -> int:
    client = make_client(args.url)
    try:
        model = await resolve_model(args.url, args.model)
        tok = default_tokenizer(args.tokenizer, model)
        workload = make_workload(args.num_requests, args.input_len, args.output_len, args.rate, args.seed, tok)
        print(f"{args.num_requests} requests to {args.url} ({args.endpoint}, model {model}): input {args.input_len}, "
              f"output {args.output_len} tokens ({tok.name}), rate {args.rate}/s, seed {args.seed}", file=sys.stderr)
        results, duration = await run_workload(client, model, workload, endpoint=args.endpoint,
                                               ignore_eos=args.ignore_eos, extra_body=args.extra_body,
                                               concurrency=args.concurrency, progress=args.progress)
    finally:
        await client.close()
    run = BenchmarkRun(model, results, duration, summarize(results, duration))
    print(format_table(run.summary))
    if args.out:
        data = results_json(vars(args), run, tok.name)
        Path(args.out).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


def main(args: argparse.Namespace) -> int:
    """Run the benchmark of `add_arguments`' options; 0, or 2 with one line on stderr when it cannot run."""
    try:
        return asyncio.run(_main(args))
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="python -m minisgl.benchmark", description=__doc__.split("\n")[0])
    add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))

"""`python -m minisgl shell`: chat with a model in the terminal, on the same engine as `serve` (the shell starts a
server of its own on a free local port and streams from it). /reset forgets the conversation, /exit (or Ctrl-D)
leaves; Ctrl-C stops the reply being written, not the shell."""

from __future__ import annotations

import argparse
import ctypes
import re
import signal
import subprocess
import sys
import threading

HELP = "commands: /reset forgets the conversation, /exit leaves (Ctrl-D too); Ctrl-C stops a reply"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="model folder (default: SmolLM2-135M-Instruct from tools/setup_models.py)")
    p.add_argument("--max-tokens", type=int, default=512, help="the longest reply, in tokens")
    p.add_argument("--temperature", type=float, default=0.0, help="0 (the default) is greedy")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--system", default=None, help="a system message to begin the conversation with")


def _die_with_parent() -> None:
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _start_server(model: str) -> tuple[subprocess.Popen, str]:
    # a session of its own: Ctrl-C in this terminal is for the shell, not for the server
    proc = subprocess.Popen([sys.executable, "-m", "minisgl", "serve", "--model", model, "--port", "0"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True,
                            preexec_fn=_die_with_parent)
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"serving \S+ at (http://\S+) ", line)
        if m:
            # keep draining its log so that it never blocks on a full pipe
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
            return proc, m.group(1)
        if "error" in line:
            print(line.rstrip(), file=sys.stderr)
    proc.wait()
    raise SystemExit(f"the model server did not start (exit code {proc.returncode})")


def _reply(url: str, model: str, messages: list[dict[str, str]], args: argparse.Namespace) -> str:
    """Stream one reply to the terminal; Ctrl-C stops it (closing the connection aborts the request on the server)
    and keeps what came. A client of its own, so that Ctrl-C at any moment (even before the first chunk) closes
    exactly this request's connection."""
    import openai

    text: list[str] = []
    with openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=600) as client:
        try:
            stream = client.chat.completions.create(model=model, messages=messages, max_tokens=args.max_tokens,
                                                    temperature=args.temperature, top_p=args.top_p, stream=True)
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    text.append(chunk.choices[0].delta.content)
                    print(text[-1], end="", flush=True)
        except KeyboardInterrupt:
            print(" [stopped]", end="")
    print(flush=True)
    return "".join(text)


def main(args: argparse.Namespace) -> int:
    import openai

    print(f"starting {args.model} ...", file=sys.stderr, flush=True)
    try:
        proc, url = _start_server(args.model)
    except KeyboardInterrupt:
        return 130
    try:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=600)
        model = client.models.list().data[0].id
        start = [{"role": "system", "content": args.system}] if args.system else []
        history = list(start)
        print(f"{model} is ready; {HELP}", flush=True)
        while True:
            try:
                line = input(">>> ").strip()
            except EOFError:
                print()
                return 0
            except KeyboardInterrupt:
                print()
                continue
            if not line:
                continue
            if line == "/exit":
                return 0
            if line == "/reset":
                history = list(start)
                print("(the conversation is forgotten)", flush=True)
                continue
            if line.startswith("/"):
                print(f"unknown command {line.split()[0]}; {HELP}", flush=True)
                continue
            history.append({"role": "user", "content": line})
            try:
                answer = _reply(url, model, history, args)
            except KeyboardInterrupt:  # Ctrl-C while the request was being made or closed
                print(" [stopped]", flush=True)
                answer = ""
            except openai.APIError as e:
                history.pop()
                print(f"error: {e}", flush=True)
                continue
            history.append({"role": "assistant", "content": answer})
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()

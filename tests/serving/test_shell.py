"""`python -m minisgl shell` through a pseudo-terminal, as a person uses it: a reply, Ctrl-C during a reply (the
reply stops, the shell stays), /reset, /exit (the shell and its server are gone)."""

from __future__ import annotations

import os
import pty
import select
import sys
import time
from pathlib import Path

from tests.serving.running import REPO


class Term:
    def __init__(self, argv: list[str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the shell, with the pty as its controlling terminal
            os.chdir(REPO)
            os.execvp(argv[0], argv)
        self.out = b""
        self.pos = 0

    def read_until(self, marker: bytes, timeout: float) -> bytes:
        """What the terminal showed from where the last read ended up to and including the next `marker`."""
        deadline = time.monotonic() + timeout
        while marker not in self.out[self.pos:]:
            left = deadline - time.monotonic()
            shown = self.out[-2000:].decode(errors="replace")
            assert left > 0, f"no {marker!r} within {timeout} s; the terminal shows:\n{shown}"
            if select.select([self.fd], [], [], min(left, 0.5))[0]:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:  # the child closed the terminal
                    break
        end = self.out.index(marker, self.pos) + len(marker)
        chunk, self.pos = self.out[self.pos:end], end
        return chunk

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            try:
                if select.select([self.fd], [], [], 0.1)[0]:
                    self.out += os.read(self.fd, 65536)
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the shell did not exit")


def _sockets(pid: int) -> int:
    """How many sockets the process holds open."""
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            n += os.readlink(fd).startswith("socket:")
        except FileNotFoundError:  # closed meanwhile
            pass
    return n


def _children(pid: int) -> list[int]:
    return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]


def test_the_shell_replies_stops_on_ctrl_c_resets_and_exits():
    from minisgl.testing import smollm2_path

    term = Term([sys.executable, "-m", "minisgl", "shell", "--model", str(smollm2_path()), "--max-tokens", "300"])
    try:
        term.read_until(b"is ready", 240)
        term.read_until(b">>> ", 10)
        server = _children(term.pid)
        assert len(server) == 1, "the shell runs one server"
        term.send(b"What is the capital of France? Answer in one word.\n")
        reply = term.read_until(b">>> ", 120).decode()
        assert "Paris" in reply, reply
        term.send(b"Write a very long story about a dragon and a knight.\n")
        term.read_until(b"knight.", 10)  # the terminal's echo of the line
        term.read_until(b" ", 120)  # some of the reply is out
        term.send(b"\x03")  # Ctrl-C, as the terminal sends it
        stopped = term.read_until(b">>> ", 30).decode()
        assert "[stopped]" in stopped, stopped
        # Ctrl-C before the first word of the reply: the shell stays too. Sent once the shell has read the line (its
        # request's connection is open): a Ctrl-C the terminal gets before then discards the typed line instead
        sockets = _sockets(term.pid)
        term.send(b"Tell me about the sea.\n")
        term.read_until(b"sea.", 10)
        deadline = time.monotonic() + 30
        while _sockets(term.pid) <= sockets:
            assert time.monotonic() < deadline, "the shell did not send the request"
            time.sleep(0.01)
        term.send(b"\x03")
        assert b"[stopped]" in term.read_until(b">>> ", 30)
        term.send(b"/reset\n")
        assert b"forgotten" in term.read_until(b">>> ", 10)
        term.send(b"/nope\n")
        assert b"unknown command /nope" in term.read_until(b">>> ", 10)
        term.send(b"What is the capital of France? Answer in one word.\n")
        again = term.read_until(b">>> ", 120).decode()
        assert again.split("\n", 1)[1] == reply.split("\n", 1)[1], "after /reset the same question gets the same reply"
        term.send(b"/exit\n")
        assert term.wait(30) == 0
        deadline = time.monotonic() + 15
        while Path(f"/proc/{server[0]}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{server[0]}").exists(), "the shell's server outlived it"
    finally:
        try:
            os.kill(term.pid, 9)
        except ProcessLookupError:
            pass

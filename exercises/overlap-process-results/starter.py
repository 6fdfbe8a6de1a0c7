"""Exercise overlap-process-results: Scheduler._process and Scheduler._release_finished.

Your code runs as if written in minisgl/scheduler/scheduler.py (its imports and globals are
available: ForwardInput, ForwardOutput, Req, ...). The class is the engine's: write the two
methods inside this stub.
"""

from __future__ import annotations

from minisgl.engine.engine import ForwardOutput
from minisgl.scheduler.scheduler import ForwardInput


class Scheduler:
    def _process(self, fwd: ForwardInput, out: ForwardOutput) -> None:
        """Read a batch's sampled tokens: append each to its request (not for chunks, nor for requests that
        already finished); a request with output_len new tokens, or an EOS it does not ignore, is finished."""
        raise NotImplementedError("write _process")

    def _release_finished(self, ongoing: ForwardInput | None) -> None:
        """Give back the KV, row and admission of every finished request not in the batch still running."""
        raise NotImplementedError("write _release_finished")

"""Exercise sampling-params-validate: SamplingParams.validate and is_greedy.

Your code runs as if written in minisgl/core.py. The class is the engine's dataclass SamplingParams
(fields temperature, top_k, top_p, ignore_eos, max_tokens, seed): write the methods inside this stub.
"""

from __future__ import annotations


class SamplingParams:
    def validate(self) -> None:
        """Raise ValueError (naming the field and its value) if max_tokens is not an int >= 1, temperature < 0,
        top_k is neither -1 nor >= 1, or top_p is not in (0, 1]."""
        raise NotImplementedError("write validate")

    @property
    def is_greedy(self) -> bool:
        """True when temperature == 0 or top_k == 1."""
        raise NotImplementedError("write is_greedy")

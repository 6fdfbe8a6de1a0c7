"""Exercise batched-sampler: Sampler.sample.

Your code runs as if written in minisgl/engine/sample.py: torch, SamplingParams and filtered_probs(logits_row,
params) are available.
"""

from __future__ import annotations

import torch

from minisgl.core import SamplingParams
from minisgl.engine.sample import filtered_probs  # noqa: F401


class Sampler:
    def sample(self, logits: torch.Tensor, params: list[SamplingParams],
               generators: list[torch.Generator | None]) -> torch.Tensor:
        """logits [bs, vocab] float32 -> [bs] int32: argmax for greedy rows; one
        torch.multinomial(filtered_probs(logits[i], params[i]), 1, generator=generators[i]) draw for the others."""
        raise NotImplementedError("write sample")

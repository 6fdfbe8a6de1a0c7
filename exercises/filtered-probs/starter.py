"""Exercise filtered-probs: filtered_probs, the distribution a sampled token is drawn from.

Your code runs as if written in minisgl/engine/sample.py (torch and SamplingParams are available).
"""

from __future__ import annotations

import torch

from minisgl.core import SamplingParams


def filtered_probs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """softmax(logits / temperature), cut to the top_k most likely (if top_k > 0), then to the smallest nucleus whose
    mass reaches top_p of what is left (if top_p < 1); renormalised. logits: [vocab]; returns [vocab] float32."""
    raise NotImplementedError("write filtered_probs")

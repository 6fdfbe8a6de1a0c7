"""Rule 3, "rows without a generator draw from the global one": a sampled row whose generator is None takes its argmax instead of drawing."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy and gen is not None:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0].to(torch.int32)
        return out

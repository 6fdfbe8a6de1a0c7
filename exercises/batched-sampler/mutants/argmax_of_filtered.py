"""Rule 2, "one draw torch.multinomial(filtered_probs(...), 1, generator=...)": a sampled row takes the argmax of filtered_probs (nothing is drawn), so it is greedy in disguise."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, p in enumerate(params):
            if not p.is_greedy:
                out[i] = filtered_probs(logits[i], p).argmax().to(torch.int32)
        return out

"""the request's generator is ignored: draws come from the global random generator (seeds do nothing)."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, _gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=None)[0].to(torch.int32)
        return out

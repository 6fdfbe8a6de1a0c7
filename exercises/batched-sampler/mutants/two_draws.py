"""Rule 2, "one draw": a sampled row draws two tokens (without replacement) and keeps the second: its generator moves two draws."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                probs = filtered_probs(logits[i], p)
                k = 2 if int((probs > 0).sum()) >= 2 else 1
                out[i] = torch.multinomial(probs, k, generator=gen)[k - 1].to(torch.int32)
        return out

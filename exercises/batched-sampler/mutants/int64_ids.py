"""the token ids are returned as int64 (argmax's dtype) instead of int32."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0]
        return out

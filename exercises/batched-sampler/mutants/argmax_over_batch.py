"""the greedy argmax is taken over the batch dimension (dim 0) instead of over the vocabulary."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=0)[: logits.shape[0]].to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0].to(torch.int32)
        return out

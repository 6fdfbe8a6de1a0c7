"""rows are sampled from softmax(logits / temperature), ignoring top-k and top-p."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                probs = torch.softmax(logits[i] / p.temperature, dim=-1)
                out[i] = torch.multinomial(probs, 1, generator=gen)[0].to(torch.int32)
        return out

"""Rule 3, "one row after another in row order": the rows are sampled from the last to the first, so unseeded rows take the global generator's draws in reverse order."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i in reversed(range(len(params))):
            p, gen = params[i], generators[i]
            if not p.is_greedy:
                out[i] = torch.multinomial(filtered_probs(logits[i], p), 1, generator=gen)[0].to(torch.int32)
        return out

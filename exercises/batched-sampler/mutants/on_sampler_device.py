"""Device, "on the device of logits": the tokens are moved to the Sampler's own device (self.device) instead of staying with logits."""

import torch


class Sampler:
    def sample(self, logits, params, generators):
        greedy = logits.argmax(dim=-1).to(self.device, torch.int32)
        if all(p.is_greedy for p in params):
            return greedy
        out = greedy.clone()
        for i, (p, gen) in enumerate(zip(params, generators)):
            if not p.is_greedy:
                out[i] = torch.multinomial(filtered_probs(logits[i].to(self.device), p), 1, generator=gen)[0]
        return out

"""Biases, "biases only when the config has them": q/k/v and gate/up biases are keys whatever attention_bias and mlp_bias say."""


class DenseCausalLM:
    def weight_parts(self):
        c = self.config
        q, kv, inter = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
        parts = {}
        for i in range(c.num_layers):
            attn, mlp = f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp"
            for s in ["weight", "bias"]:
                for name, start, rows in (("q", 0, q), ("k", q, kv), ("v", q + kv, kv)):
                    parts[f"{attn}.{name}_proj.{s}"] = (f"{attn}.qkv_proj.{s}", start, rows)
            for s in ["weight", "bias"]:
                parts[f"{mlp}.gate_proj.{s}"] = (f"{mlp}.gate_up_proj.{s}", 0, inter)
                parts[f"{mlp}.up_proj.{s}"] = (f"{mlp}.gate_up_proj.{s}", inter, inter)
        return parts

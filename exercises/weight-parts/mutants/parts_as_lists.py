"""Form, "{checkpoint_name: (our_name, first_row, rows)}": each part is a list [our_name, first_row, rows], not a tuple."""


class DenseCausalLM:
    def weight_parts(self):
        c = self.config
        q, kv, inter = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
        parts = {}
        for i in range(c.num_layers):
            attn, mlp = f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp"
            for s in (["weight", "bias"] if c.attention_bias else ["weight"]):
                for name, start, rows in (("q", 0, q), ("k", q, kv), ("v", q + kv, kv)):
                    parts[f"{attn}.{name}_proj.{s}"] = [f"{attn}.qkv_proj.{s}", start, rows]
            for s in (["weight", "bias"] if c.mlp_bias else ["weight"]):
                parts[f"{mlp}.gate_proj.{s}"] = [f"{mlp}.gate_up_proj.{s}", 0, inter]
                parts[f"{mlp}.up_proj.{s}"] = [f"{mlp}.gate_up_proj.{s}", inter, inter]
        return parts

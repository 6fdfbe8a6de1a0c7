"""Form, "(our_name, first_row, rows)": the third value is the end row (first_row + rows), as in a slice, not the number of rows."""


class DenseCausalLM:
    def weight_parts(self):
        c = self.config
        q, kv, inter = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
        parts = {}
        for i in range(c.num_layers):
            attn, mlp = f"model.layers.{i}.self_attn", f"model.layers.{i}.mlp"
            for s in (["weight", "bias"] if c.attention_bias else ["weight"]):
                for name, start, rows in (("q", 0, q), ("k", q, kv), ("v", q + kv, kv)):
                    parts[f"{attn}.{name}_proj.{s}"] = (f"{attn}.qkv_proj.{s}", start, start + rows)
            for s in (["weight", "bias"] if c.mlp_bias else ["weight"]):
                parts[f"{mlp}.gate_proj.{s}"] = (f"{mlp}.gate_up_proj.{s}", 0, inter)
                parts[f"{mlp}.up_proj.{s}"] = (f"{mlp}.gate_up_proj.{s}", inter, 2 * inter)
        return parts

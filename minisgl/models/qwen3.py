from minisgl.models.dense import DenseCausalLM


class Qwen3ForCausalLM(DenseCausalLM):
    QK_NORM = True  # Qwen3 normalises q and k per head before RoPE

from minisgl.models.dense import DenseCausalLM


class LlamaForCausalLM(DenseCausalLM):
    QK_NORM = False

from minisgl.layers.activation import silu_and_mul
from minisgl.layers.attention import AttentionLayer
from minisgl.layers.base import BaseOP, OPList, model_ops
from minisgl.layers.embedding import LMHead, VocabEmbedding
from minisgl.layers.linear import Linear
from minisgl.layers.norm import RMSNorm
from minisgl.layers.rotary import RotaryEmbedding

__all__ = ["AttentionLayer", "BaseOP", "LMHead", "Linear", "OPList", "RMSNorm", "RotaryEmbedding",
           "VocabEmbedding", "model_ops", "silu_and_mul"]

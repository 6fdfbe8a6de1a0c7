from minisgl.engine.config import EngineConfig
from minisgl.engine.engine import Engine, ForwardOutput
from minisgl.engine.sample import Sampler

__all__ = ["Engine", "EngineConfig", "ForwardOutput", "Sampler"]

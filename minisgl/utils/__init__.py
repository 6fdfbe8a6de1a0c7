from minisgl.utils.device import (
    current_stream,
    default_device,
    get_free_memory,
    init_cpu_threads,
    is_cuda,
    make_event,
    make_stream,
    pin,
    stream_ctx,
    synchronize,
)
from minisgl.utils.logging import init_logger
from minisgl.utils.registry import Registry

__all__ = [
    "Registry",
    "current_stream",
    "default_device",
    "get_free_memory",
    "init_cpu_threads",
    "init_logger",
    "is_cuda",
    "make_event",
    "make_stream",
    "pin",
    "stream_ctx",
    "synchronize",
]

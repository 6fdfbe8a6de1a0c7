"""Exercise graph-bs-list: the batch sizes the engine records CUDA graphs for.

Your code runs as if written in minisgl/engine/graph.py (its imports and globals are available).
"""

from __future__ import annotations


def make_graph_bs_list(cuda_graph_bs: list[int] | None, cuda_graph_max_bs: int | None, is_cuda: bool,
                       free_memory: int) -> list[int]:
    """The batch sizes to capture, as a list of Python ints: 1, 2, 4 and every multiple of 8 up to a
    ceiling; an explicit list wins.

    - cuda_graph_bs not None: its sizes >= 1, sorted ascending, each once (an empty list gives []);
    - cuda_graph_max_bs None: off ([]) on a CPU; on CUDA a ceiling of 256 if free_memory (bytes) is
      more than 80 GiB (80 << 30), else 160;
    - a ceiling < 1: [] (on CUDA too);
    - else [1, 2, 4, 8, 16, 24, ...], every size <= the ceiling, ascending.
    """
    raise NotImplementedError("write make_graph_bs_list")

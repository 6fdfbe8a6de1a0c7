"""The form, "a list of Python ints": the sizes are 0-d tensors (they compare equal to ints, but are not ints)."""

import torch


def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
    if cuda_graph_bs is not None:
        return list(torch.tensor(sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1}), dtype=torch.int64))
    if cuda_graph_max_bs is None:
        if not is_cuda:
            return []
        cuda_graph_max_bs = 256 if free_memory > 80 << 30 else 160
    if cuda_graph_max_bs < 1:
        return []
    return [torch.tensor(bs) for bs in [1, 2, 4, *range(8, cuda_graph_max_bs + 1, 8)] if bs <= cuda_graph_max_bs]

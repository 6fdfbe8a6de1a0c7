"""Rule 1, "an explicit list wins": the ceiling is applied to the explicit list too."""


def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
    if cuda_graph_bs is not None:
        sizes = sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1})
        return [bs for bs in sizes if cuda_graph_max_bs is None or bs <= cuda_graph_max_bs]
    if cuda_graph_max_bs is None:
        if not is_cuda:
            return []
        cuda_graph_max_bs = 256 if free_memory > 80 << 30 else 160
    if cuda_graph_max_bs < 1:
        return []
    return [bs for bs in [1, 2, 4, *range(8, cuda_graph_max_bs + 1, 8)] if bs <= cuda_graph_max_bs]

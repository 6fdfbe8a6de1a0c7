"""Rule 3, "a ceiling below 1 turns graphs off, on CUDA too": `if not cuda_graph_max_bs:` takes
0 for "no ceiling" (on CUDA it then records the default list)."""


def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
    if cuda_graph_bs is not None:
        return sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1})
    if not cuda_graph_max_bs:
        if not is_cuda:
            return []
        cuda_graph_max_bs = 256 if free_memory > 80 << 30 else 160
    if cuda_graph_max_bs < 1:
        return []
    return [bs for bs in [1, 2, 4, *range(8, cuda_graph_max_bs + 1, 8)] if bs <= cuda_graph_max_bs]

"""Rule 4, "ascending": the sizes come largest first (the order the graphs are captured in)."""


def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
    if cuda_graph_bs is not None:
        return sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1})
    if cuda_graph_max_bs is None:
        if not is_cuda:
            return []
        cuda_graph_max_bs = 256 if free_memory > 80 << 30 else 160
    if cuda_graph_max_bs < 1:
        return []
    return [bs for bs in [*range(cuda_graph_max_bs // 8 * 8, 7, -8), 4, 2, 1] if bs <= cuda_graph_max_bs]

"""Rule 4, "every multiple of 8": the sizes keep doubling past 8 (16, 32, 64, ...)."""


def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
    if cuda_graph_bs is not None:
        return sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1})
    if cuda_graph_max_bs is None:
        if not is_cuda:
            return []
        cuda_graph_max_bs = 256 if free_memory > 80 << 30 else 160
    if cuda_graph_max_bs < 1:
        return []
    sizes, bs = [], 1
    while bs <= cuda_graph_max_bs:
        sizes.append(bs)
        bs *= 2
    return sizes

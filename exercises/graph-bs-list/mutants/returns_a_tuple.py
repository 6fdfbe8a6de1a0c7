"""The form, "returns a list": the sizes come back as a tuple (equal item for item, but not a list)."""


def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
    if cuda_graph_bs is not None:
        return tuple(sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1}))
    if cuda_graph_max_bs is None:
        if not is_cuda:
            return ()
        cuda_graph_max_bs = 256 if free_memory > 80 << 30 else 160
    if cuda_graph_max_bs < 1:
        return ()
    return tuple(bs for bs in [1, 2, 4, *range(8, cuda_graph_max_bs + 1, 8)] if bs <= cuda_graph_max_bs)

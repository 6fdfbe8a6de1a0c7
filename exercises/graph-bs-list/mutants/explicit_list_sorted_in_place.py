"""Rule 1, "leave cuda_graph_bs as it is (it is the caller's list): build a new list": the caller's list is
cleaned and sorted in place (cuda_graph_bs[:] = ...) and returned itself."""


def make_graph_bs_list(cuda_graph_bs, cuda_graph_max_bs, is_cuda, free_memory):
    if cuda_graph_bs is not None:
        cuda_graph_bs[:] = sorted({int(bs) for bs in cuda_graph_bs if int(bs) >= 1})
        return cuda_graph_bs
    if cuda_graph_max_bs is None:
        if not is_cuda:
            return []
        cuda_graph_max_bs = 256 if free_memory > 80 << 30 else 160
    if cuda_graph_max_bs < 1:
        return []
    return [bs for bs in [1, 2, 4, *range(8, cuda_graph_max_bs + 1, 8)] if bs <= cuda_graph_max_bs]

"""split K/V heads, "starting at r * KV/size": the first head is the rank itself, so with 4 K/V heads on 2 ranks
rank 1 keeps heads 1 and 2 (overlapping rank 0's)."""


def check_tp_size(c, size):
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"tp_size must be a positive integer, got {size!r}")
    if size > 1 and c.num_experts:
        raise ValueError(f"tensor parallelism of a Mixture-of-Experts model ({c.num_experts} experts) is not "
                         "supported yet: run it with tp_size 1")
    what = [("attention heads", c.num_heads), ("MLP intermediate size", c.intermediate_size),
            ("vocabulary size", c.vocab_size)]
    for name, n in what:
        if n % size:
            raise ValueError(f"tp_size {size} does not divide the model's {name}, {n}")
    kv = c.num_kv_heads
    if size > kv and size % kv:
        raise ValueError(f"tp_size {size} is neither a divisor nor a multiple of the model's {kv} K/V heads")
    if size <= kv and kv % size:
        raise ValueError(f"tp_size {size} does not divide the model's {kv} K/V heads")


def kv_head_range(num_kv_heads, tp):
    if tp.size <= num_kv_heads:
        per = num_kv_heads // tp.size
        return tp.rank, per
    return tp.rank // (tp.size // num_kv_heads), 1

"""rule 2, "a Mixture-of-Experts model is refused when size > 1": the MoE check is missing."""


def check_tp_size(c, size):
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"tp_size must be a positive integer, got {size!r}")
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
        return tp.rank * per, per
    return tp.rank // (tp.size // num_kv_heads), 1

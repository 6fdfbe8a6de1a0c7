"""A correct solution written differently: the checks as a table of (ok, message), the range from the number of
ranks that share a K/V head."""


def check_tp_size(c, size):
    if type(size) is not int or size <= 0:
        raise ValueError(f"bad tp_size {size}: a positive integer is needed")
    if c.num_experts > 0 and size != 1:
        raise ValueError("a Mixture-of-Experts model runs on one rank only")
    kv = c.num_kv_heads
    rules = [
        (c.num_heads % size == 0, f"{c.num_heads} attention heads cannot be shared by {size} ranks"),
        (c.intermediate_size % size == 0, f"an intermediate size of {c.intermediate_size} cannot be shared by "
                                          f"{size} ranks"),
        (c.vocab_size % size == 0, f"a vocabulary of {c.vocab_size} cannot be shared by {size} ranks"),
        (kv % size == 0 or size % kv == 0, f"{kv} K/V heads and {size} ranks: neither divides the other"),
    ]
    for ok, message in rules:
        if not ok:
            raise ValueError(message)


def kv_head_range(num_kv_heads, tp):
    sharing = max(1, tp.size // num_kv_heads)  # ranks that hold the same K/V head
    count = max(1, num_kv_heads // tp.size)
    return (tp.rank // sharing) * count, count

"""Exercise req-lengths: Req.__post_init__, its length properties and complete_one.

Your code runs as if written in minisgl/core.py. The class is the engine's dataclass Req (fields
input_ids, table_idx, cached_len, output_len, uid, sampling_params, cache_handle, generator): write
the methods inside this stub of the same name.
"""

from __future__ import annotations


class Req:
    def __post_init__(self) -> None:
        """Set prompt_len and device_len (both = len(input_ids)), max_device_len (len(input_ids) + output_len),
        matched_len = 0 and chunked = False."""
        raise NotImplementedError("write __post_init__")

    @property
    def extend_len(self) -> int:
        """Tokens the next forward computes: device_len - cached_len."""
        raise NotImplementedError("write extend_len")

    @property
    def remain_len(self) -> int:
        """Tokens it may still get: max_device_len - device_len."""
        raise NotImplementedError("write remain_len")

    @property
    def can_decode(self) -> bool:
        """True while remain_len is positive."""
        raise NotImplementedError("write can_decode")

    @property
    def output_ids(self) -> list[int]:
        """The generated tokens: input_ids after the prompt."""
        raise NotImplementedError("write output_ids")

    def complete_one(self) -> None:
        """After a forward: cached_len = device_len, and device_len grows by one unless chunked."""
        raise NotImplementedError("write complete_one")

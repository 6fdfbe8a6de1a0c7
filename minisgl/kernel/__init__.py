"""The engine's own kernels (the book's chapter 19), in Triton: storing a batch's K/V into the paged pool at its
slots, and gathering embedding rows. Each has a torch version beside it, the same result bit for bit.

Where each runs: compiled on CUDA (the engine's KV pool uses ``store_kv`` there); on a CPU the torch versions are
the engine's, and Triton's interpreter runs the kernels on CPU tensors in tests (``TRITON_INTERPRET=1``, read when
triton is first imported in a process: set it before anything imports triton). Triton is imported on first use,
never with the engine.
"""

from __future__ import annotations

from minisgl.kernel.store import gather_rows, gather_rows_torch, store_kv, store_kv_torch, triton_available

__all__ = ["gather_rows", "gather_rows_torch", "store_kv", "store_kv_torch", "triton_available"]

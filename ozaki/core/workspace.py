"""Grow-only, thread-local workspace for the scheme's planes.

Repeated calls reuse the same pages (no first-touch page faults, no allocator
churn). Each Python thread has its own cache, so concurrent calls never share a
buffer. Requests beyond the cap are served by fresh arrays that are not kept.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

__all__ = ["Workspace", "workspace", "set_workspace_limit", "workspace_limit",
           "workspace_bytes"]

_DEFAULT_LIMIT = 8 * 2 ** 30
_limit: int | None = None  # read from the environment at first use


def _env_limit() -> int:
    """``OZAKI_WORKSPACE_LIMIT`` (bytes, a non-negative integer), else 8 GiB."""
    text = os.environ.get("OZAKI_WORKSPACE_LIMIT")
    if text is None:
        return _DEFAULT_LIMIT
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"OZAKI_WORKSPACE_LIMIT must be a non-negative integer number of "
                         f"bytes, got {text!r}")
    return value


def set_workspace_limit(nbytes: int) -> None:
    """Largest total size (bytes) that a thread's workspace keeps between calls."""
    global _limit
    if isinstance(nbytes, (bool, np.bool_)) or not isinstance(nbytes, (int, np.integer)) \
            or nbytes < 0:
        raise ValueError(f"nbytes must be a non-negative integer, got {nbytes!r}")
    _limit = int(nbytes)


def workspace_limit() -> int:
    """Current cap in bytes (default 8 GiB, or ``OZAKI_WORKSPACE_LIMIT`` read at first use)."""
    global _limit
    if _limit is None:
        _limit = _env_limit()
    return _limit


class Workspace:
    """Named byte buffers that only grow; :meth:`take` returns C-ordered typed views."""

    def __init__(self):
        self._buffers: dict[str, np.ndarray] = {}

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self._buffers.values())

    def take(self, name: str, shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
        dtype = np.dtype(dtype)
        size = math.prod(shape) * dtype.itemsize
        buf = self._buffers.get(name)
        if buf is None or buf.size < size:
            grown = self.nbytes - (0 if buf is None else buf.nbytes) + size
            if grown > workspace_limit():
                return np.empty(shape, dtype)
            buf = np.empty(size, np.uint8)
            self._buffers[name] = buf
        return buf[:size].view(dtype).reshape(shape)

    def clear(self) -> None:
        self._buffers.clear()


_local = threading.local()


def workspace() -> Workspace:
    """This thread's workspace."""
    ws = getattr(_local, "ws", None)
    if ws is None:
        ws = _local.ws = Workspace()
    return ws


def workspace_bytes(m: int, n: int, k: int, *, scheme: str = "fp64",
                    num_moduli: int | str = "auto", engine=None) -> int:
    """Bytes of workspace that ``dgemm`` of an (m, k) by (k, n) product takes.

    For ``num_moduli="auto"`` the count is data-dependent; this gives the size
    for the typical count (16, 13, 6 at ``k <= 4096``). A product small enough
    keeps its N residue planes per operand and its N exact products in FP64
    (about ``8 N (m k + k n + m n)`` bytes, at most a few tens of MiB); a large
    one holds one FP64 residue plane per operand (``m k + k n`` doubles), one
    FP64 product plane (``m n``) and the N modular products as small integers
    (``N m n`` elements of 1, 2 or 4 bytes for the int8, fp8 and fp64 schemes):
    for the fp64 scheme with 6 moduli and ``m = n = k``, ``6 n**2`` doubles (the
    result adds one more). A wide product with a small ``A`` runs in blocks of
    columns and needs only a block's share. Simulation engines and k-blocking
    add their own temporaries.
    """
    from ..api.arguments import resolve
    from .moduli import MODULI, auto_num_moduli
    from .pieces import column_block, piece_bytes
    from .pipeline import residue_dtype
    for name, v in (("m", m), ("n", n), ("k", k)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    scheme, num_moduli, _, _ = resolve(scheme, num_moduli, "accurate", engine)
    if num_moduli == "auto":
        num_moduli = auto_num_moduli(scheme, k)
    item = residue_dtype(MODULI[scheme][:num_moduli]).itemsize
    w = column_block(None, m, k, n, num_moduli)
    return piece_bytes(1, m, k, w, num_moduli, item, blocked=w < n)

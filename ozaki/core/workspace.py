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

__all__ = ["Workspace", "workspace", "set_workspace_limit", "workspace_limit"]

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

    def __init__(self, xp=np):
        self.xp = xp
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
                return self.xp.empty(shape, dtype)
            buf = self.xp.empty(size, np.uint8)
            self._buffers[name] = buf
        return buf[:size].view(dtype).reshape(shape)

    def clear(self) -> None:
        self._buffers.clear()


_local = threading.local()


def workspace(xp=np) -> Workspace:
    """This thread's workspace in the array namespace ``xp`` (a backend's ``xp``)."""
    spaces = getattr(_local, "spaces", None)
    if spaces is None:
        spaces = _local.spaces = {}
    ws = spaces.get(xp.__name__)
    if ws is None:
        ws = spaces[xp.__name__] = Workspace(xp)
    return ws

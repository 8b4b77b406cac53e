"""Settings scoped to the calling thread, in the style of :func:`scipy.fft.set_workers`.

ozaki's settings (:func:`ozaki.set_workers`, :func:`ozaki.set_backend`,
:func:`ozaki.set_small_products`) change nothing process-wide: each is an attribute
of a :class:`threading.local`, set for the duration of a ``with`` block and restored
on exit, so other threads, and the caller after the block, see what they had.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

__all__ = ["scoped"]


@contextlib.contextmanager
def scoped(local: threading.local, name: str, value: Any) -> Iterator[None]:
    """``local.name = value`` inside the block; what it was (or nothing) afterwards."""
    missing = object()
    before = getattr(local, name, missing)
    setattr(local, name, value)
    try:
        yield
    finally:
        if before is missing:
            delattr(local, name)
        else:
            setattr(local, name, before)

"""Helpers of the scripts run under ``mpiexec`` (imported from their own folder)."""

import numpy as np


def same(a, b) -> bool:
    """Bitwise equality (NaN payloads and signs of zero included)."""
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def raises(kind, text, f) -> None:
    """``f()`` raises ``kind`` with ``text`` in its message (on this rank)."""
    try:
        f()
    except kind as exc:
        assert text in str(exc), (text, str(exc))
    else:
        raise AssertionError(f"no {kind.__name__} ({text})")

"""The ``cpu-onednn`` engine's compiled passes around oneDNN's INT8 GEMM.

Each pass works on rows of a stack of matrices, ``(b, rows, cols)``, and is run over
ozaki's pass threads (:func:`run_rows`): encoding the u8 operand (``split``:
``[r & 127; r < 0]``, or ``offset``: ``r + 128``), writing the s8 operand as int8,
checking an int8 operand's bound, and combining the INT32 GEMM into the output
(``C[:m] - 128 C[m:]`` in int64 for ``split``, else a copy). The encodings and why
each is exact are in :mod:`ozaki.backends.onednn`; these passes only transcribe them,
and flag (rather than raise, inside numba) any entry that is not an integer within
the range asked for, which :func:`run_checked` turns into a ``ValueError``.

The row functions are plain Python at module level (so numba can cache them on disk);
:func:`compiled` returns them compiled (``nogil``) at the first use, once per process.
"""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace

import numpy as np

__all__ = ["encode_a_rows", "encode_b_rows", "check_b_rows", "combine_rows", "compiled",
           "run_rows", "run_checked", "OUTSIDE_INT8"]

#: The error of an operand that is not an integer of the int8 range.
OUTSIDE_INT8 = "operand outside the int8 range [-128, 127] or not integer-valued"


def encode_a_rows(t0, t1, X, out, split, bad):
    """Rows ``t0:t1`` of the u8 operand: ``[r & 127; r < 0]`` (split) or ``r + 128``.

    ``X`` (b, m, k) holds integers in ``[-128, 127]``; anything else (out of
    range, not an integer, NaN) sets ``bad[t0]`` (the value written is then
    meaningless, and the caller raises). ``out`` is u8, (b, 2m, k) for split,
    else (b, m, k).
    """
    m = X.shape[1]
    k = X.shape[2]
    flag = 0
    for t in range(t0, t1):
        g = t // m
        i = t - g * m
        for j in range(k):
            v = X[g, i, j]
            inside = (v >= -128.0) & (v <= 127.0)  # False for NaN
            r = np.int64(v if inside else 0.0)     # a defined conversion
            flag |= r != v                         # out of range, fraction or NaN
            if split:
                out[g, i, j] = r & 127             # r = (r & 127) - 128 [r < 0]
                out[g, m + i, j] = r < 0
            else:
                out[g, i, j] = r + 128
    if flag:
        bad[t0] = 1


def encode_b_rows(t0, t1, Y, out, lo, hi, bad):
    """Rows ``t0:t1`` of the s8 operand: ``Y`` (b, k, n) as int8, checked as above
    against ``[lo, hi]`` (the int8 range, or ``[-64, 64]`` for narrow ``offset``)."""
    k = Y.shape[1]
    n = Y.shape[2]
    flag = 0
    for t in range(t0, t1):
        g = t // k
        i = t - g * k
        for j in range(n):
            v = Y[g, i, j]
            inside = (v >= lo) & (v <= hi)
            r = np.int64(v if inside else 0.0)
            flag |= r != v
            out[g, i, j] = r
    if flag:
        bad[t0] = 1


def check_b_rows(t0, t1, Y, limit, bad):
    """Rows ``t0:t1`` of an int8 ``Y`` (b, k, n): flags ``bad[t0]`` where an entry
    is outside ``[-limit, limit]``."""
    k = Y.shape[1]
    n = Y.shape[2]
    flag = False
    for t in range(t0, t1):
        g = t // k
        i = t - g * k
        for j in range(n):
            v = np.int32(Y[g, i, j])
            flag |= (v < -limit) | (v > limit)
    if flag:
        bad[t0] = 1


def combine_rows(t0, t1, C, out, split):
    """Rows ``t0:t1`` of ``out`` (b, m, n) from the INT32 GEMM ``C``: ``C[:m] - 128 C[m:]``
    per stack slice (split, in int64: exact) or ``C`` itself."""
    m = out.shape[1]
    n = out.shape[2]
    for t in range(t0, t1):
        g = t // m
        i = t - g * m
        if split:
            for j in range(n):
                out[g, i, j] = np.int64(C[g, i, j]) - 128 * np.int64(C[g, m + i, j])
        else:
            for j in range(n):
                out[g, i, j] = C[g, i, j]


_kernels: SimpleNamespace | None = None
_kernels_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A child forked while another thread of the parent compiled the passes (holding
    the lock) starts with a free lock and compiles them itself."""
    global _kernels_lock
    _kernels_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def compiled() -> SimpleNamespace:
    """The passes, compiled (``nogil``, cached on disk) at their first use.

    Returns
    -------
    types.SimpleNamespace
        ``encode_a``, ``encode_b``, ``check_b`` and ``combine``: the row functions
        of this module, compiled.
    """
    global _kernels
    if _kernels is None:
        with _kernels_lock:
            if _kernels is None:
                import numba as nb
                jit = nb.njit(nogil=True, cache=True)
                _kernels = SimpleNamespace(encode_a=jit(encode_a_rows),
                                           encode_b=jit(encode_b_rows),
                                           check_b=jit(check_b_rows),
                                           combine=jit(combine_rows))
    return _kernels


def run_rows(kernel, tasks: int, per_task: int, *args) -> None:
    """``kernel`` over ``tasks`` rows of ``per_task`` entries on ozaki's pass threads
    (one thread below about 2**16 entries, where waking workers costs more)."""
    from .cpu.parallel import run
    run(kernel, tasks, *args, max_threads=max(1, tasks * per_task // 2 ** 16))


def run_checked(kernel, rows: int, per_row: int, *args, message: str = OUTSIDE_INT8) -> None:
    """An encoding or checking pass over ``rows`` rows; raises ``ValueError(message)``
    where an entry is not an integer in its range (the passes flag their first row's
    slot of ``bad``, appended to ``args`` here)."""
    bad = np.zeros(rows, np.uint8)
    run_rows(kernel, rows, per_row, *args, bad)
    if bad.any():
        raise ValueError(message)

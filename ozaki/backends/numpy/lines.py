"""Step 1's exact line data: maxima, counts, floors and their sums, from the bit patterns.

A line is a row of an operand's bits (``axis`` 0) or a column (``axis`` 1) of a stack
``bits`` (b, r, c) (int64 views of doubles). Everything here is an integer operation
on the bits (masks, shifts, maxima, counts, int64 sums), so it is exact and the order
of a reduction does not matter: the values are those of the compiled passes.
"""

from __future__ import annotations

import numpy as np

from ...core.scaling import exponents
from .ieee import ABS, EXP, mantissa_exponent

__all__ = ["line_stats", "floors", "line_shift", "entry_shift", "norm_sums"]


def _across(axis: int) -> int:
    """The axis of a stack (b, r, c) that a line runs along: columns for rows, rows for columns."""
    return 2 if axis == 0 else 1


def line_stats(bits: np.ndarray, axis: int):
    """``(maxbits, bad, nnz)`` per line, each (b, lines).

    ``maxbits``: the bits of the largest finite ``|x|`` (0 when there is none); the
    bits of finite non-negative doubles order as their values, so the integer maximum
    of the magnitude bits is the bits of the largest magnitude. ``bad``: whether an
    Inf or a NaN occurs (exponent field all ones). ``nnz``: the finite nonzero entries.
    """
    a = bits & ABS
    finite = a < EXP
    over = _across(axis)
    maxbits = np.where(finite, a, 0).max(axis=over, initial=0)
    bad = (~finite).any(axis=over)
    nnz = (finite & (a > 0)).sum(axis=over, dtype=np.int64)
    return maxbits.astype(np.int64), bad, nnz


def floors(bits: np.ndarray, shift) -> np.ndarray:
    """``floor(|x| 2**shift)`` (int64) of the doubles with bits ``bits`` (0 for Inf, NaN).

    With ``|x| = mant 2**(ex - 1075)`` (:func:`~ozaki.backends.numpy.ieee.mantissa_exponent`)
    and ``d = ex - 1075 + shift``, the floor is ``mant << d`` for ``d >= 0`` and
    ``mant >> -d`` otherwise: exact integer shifts (counts capped at 63, which gives 0
    for ``d <= -53`` as ``mant < 2**53``). ``shift`` broadcasts against ``bits``; the
    callers keep the results below ``2**53``.
    """
    mant, ex = mantissa_exponent(bits)
    d = ex - 1075 + np.asarray(shift, np.int64)
    left = mant << np.minimum(np.maximum(d, 0), 63)
    right = mant >> np.minimum(np.maximum(-d, 0), 63)
    return np.where((bits & ABS) < EXP, np.where(d >= 0, left, right), 0)


def line_shift(maxbits: np.ndarray, top: int) -> np.ndarray:
    """``top - E`` per line (0 on an all-zero line), ``E`` of
    :func:`ozaki.core.scaling.exponents` (integers)."""
    E, zero = exponents(maxbits)
    return np.where(zero, 0, top - E).astype(np.int64)


def entry_shift(shift: np.ndarray, axis: int) -> np.ndarray:
    """Per-line shifts (b, lines) as per-entry shifts broadcasting against (b, r, c)."""
    shift = np.asarray(shift, np.int64)
    return shift[:, :, None] if axis == 0 else shift[:, None, :]


def norm_sums(bits: np.ndarray, shift: np.ndarray, axis: int):
    """Exact ``(sum F**2, sum F)`` (int64, (b, lines)) of ``F = floor(|x| 2**shift)``.

    The caller keeps ``F < 2**h`` with ``lines' length * 2**(2h) < 2**62``: every
    partial int64 sum is then exact, in any order.
    """
    F = floors(bits, entry_shift(shift, axis))
    over = _across(axis)
    return (F * F).sum(axis=over, dtype=np.int64), F.sum(axis=over, dtype=np.int64)

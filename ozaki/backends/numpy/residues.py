"""Step 2, the residues ``smod(trunc(x 2**shift), p)`` of an operand, in exact integers.

The scaled, truncated magnitude is ``y = mant 2**E`` for ``E >= 0``, or ``mant >> -E``
(:mod:`ozaki.backends.numpy.lines`); write ``y = m 2**E'`` with ``m = mant >> max(-E, 0)``
(below ``2**53``) and ``E' = max(E, 0)``. Then ``y mod p = (m mod p)(2**E' mod p) mod p``:
int64 operations on integers below ``2**44`` (``p < 2**22``), with ``2**E' mod p`` from
Python's exact modular power. The residue is unique in the symmetric range
``[-floor(p/2), ceil(p/2) - 1]``, so it is the value of both compiled passes, whatever
their arithmetic; only the sign of a zero residue tells them apart, and it is
reproduced here (:func:`residues`). Non-finite entries have residue 0.
"""

from __future__ import annotations

import numpy as np

from .ieee import ABS, EXP, mantissa_exponent
from .lines import entry_shift

__all__ = ["residues"]

def _scaled(bits: np.ndarray, shift: np.ndarray):
    """``(m, E')`` with ``trunc(|x| 2**shift) = m 2**E'`` (int64 each); ``m = 0`` for Inf, NaN."""
    mant, ex = mantissa_exponent(bits)
    E = ex - 1075 + shift
    m = mant >> np.minimum(np.maximum(-E, 0), 63)  # exact: drops the fraction bits
    m = np.where((bits & ABS) < EXP, m, 0)
    return m, np.where(m > 0, np.maximum(E, 0), 0)


def residues(bits: np.ndarray, axis: int, shift: np.ndarray, moduli, out: np.ndarray,
             split: int) -> None:
    """``out[q] = smod(trunc(x 2**shift), p_q)`` for the block ``bits`` (bx, r, c).

    ``shift`` (b, lines) holds one shift per line along ``axis`` (rows 0, columns 1);
    ``bits`` has ``bx`` 1 (shared by the ``b`` slices of ``out`` (L, b, r, c)) or ``b``.

    Signs of zero, as the compiled passes give them: the split pass (``split`` 3 or 4)
    adds ``+0.0`` to its result, so every residue is ``+0.0`` or nonzero; the general
    pass (``split`` 0) negates the residue of the magnitude for an ``x`` whose sign bit
    is set (Inf and NaN included), which turns a zero residue into ``-0.0``. Both are
    reproduced: the value is computed exactly (module docstring), converted to float
    (exact: below ``2**21``), then negated for a set sign bit and corrected by ``p``
    where the negation leaves the range (the general pass), or raised by ``+0.0``
    (the split pass).

    Parameters
    ----------
    bits : ndarray of int64, shape (bx, r, c)
        The block's doubles as bits (C-ordered layout of the operand).
    axis : int
        The axis of the lines that carry the shifts: 0 (rows) or 1 (columns).
    shift : ndarray of int, shape (b, r) or (b, c)
        One shift per line.
    moduli : sequence of int
        The ``L`` moduli, each below ``2**22``.
    out : ndarray, shape (L, b, r, c)
        Receives the residues (float64, or any type that holds them).
    split : int
        The pass whose signs of zero to reproduce: 0 (general), 3 or 4 (split).
    """
    b = out.shape[1]
    bits = np.broadcast_to(bits, (b,) + bits.shape[1:])
    m, E = _scaled(bits, entry_shift(shift, axis))
    powers, where = np.unique(E, return_inverse=True)
    where = where.reshape(E.shape)
    negative = bits < 0
    for q, p in enumerate(moduli):
        p = int(p)
        table = np.array([pow(2, int(e), p) for e in powers], np.int64)
        r = (m % p) * table[where] % p  # in [0, p): (m mod p)(2**E' mod p) < 2**44
        hi = (p - 1) // 2
        mag = np.where(r > hi, r - p, r).astype(np.float64)  # symmetric residue of |y|
        signed = np.where(negative, -mag, mag)  # -0.0 where mag == 0
        signed = np.where(signed > hi, signed - p, signed)
        out[q] = signed + 0.0 if split else signed

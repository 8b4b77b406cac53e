"""Exact arithmetic in Python integers: the exactly rounded dot product, and an exact FMA.

A finite double is ``x = +-mx 2**(ex - 1075)`` with an integer ``mx < 2**53`` and
``ex >= 1`` (:func:`~ozaki.backends.numpy.ieee.mantissa_exponent`), so a product of two
is ``+-mx my 2**(ex + ey - 2150)`` and every sum of products is an integer multiple of
``2**-2148`` (``ex + ey >= 2``): the dot product is the Python integer
``S = sum +-mx my 2**(ex + ey - 2)`` scaled by ``2**-2148``, formed without any rounding.
It is rounded **once** by Python's true division ``S / 2**2148`` of two integers, which
CPython rounds correctly (to nearest, ties to even, with gradual underflow; the value a
:class:`fractions.Fraction` gives through ``float()``, which is that division). The
division raises ``OverflowError`` instead of rounding to ``inf``, so magnitudes that
round to ``2**1024`` or more (from ``2**1024 - 2**970``, the midpoint above the largest
double, tie to even included) are mapped to ``+-inf`` first.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ...core.backend import dot_arguments
from .ieee import ABS, EXP, mantissa_exponent

__all__ = ["dot_rows_cols", "rounded", "fma"]

_SCALE = 2148  # S counts units of 2**-2148
#: ``(2**1024 - 2**970) 2**2148``: from here on the rounded magnitude is ``2**1024`` (inf).
_OVERFLOW = ((1 << 1024) - (1 << 970)) << _SCALE
_LIMIT = Fraction((1 << 1024) - (1 << 970))


def rounded(S: int) -> float:
    """``S 2**-2148`` rounded once to the nearest double (``+0.0`` for ``S = 0``; a nonzero
    sum that rounds to zero keeps its sign; ``+-inf`` beyond the largest double)."""
    if S == 0:
        return 0.0
    mag = -S if S < 0 else S
    value = float("inf") if mag >= _OVERFLOW else mag / (1 << _SCALE)
    return -value if S < 0 else value


def dot_rows_cols(X, Y, ii, jj) -> np.ndarray:
    """``out[t] = fl(sum_l X[ii[t], l] Y[jj[t], l])``, exactly rounded (module docstring).

    Terms with a non-finite or zero factor are skipped (non-finite read as 0). The
    argument checks are those of the compiled kernel.

    Parameters
    ----------
    X : ndarray, shape (p, k)
        Real floating array (float16, float32 or float64; converted exactly).
    Y : ndarray, shape (q, k)
        Same, holding the columns of the right factor as rows.
    ii, jj : array_like of int, shape (t,)
        Row indices into ``X`` and ``Y``.

    Returns
    -------
    ndarray, shape (t,), float64
        The exactly rounded dot products.
    """
    Xb, Yb, ii, jj = dot_arguments(X, Y, ii, jj)
    mx, ex = mantissa_exponent(Xb)
    my, ey = mantissa_exponent(Yb)
    live_x = ((Xb & ABS) < EXP) & ((Xb & ABS) != 0)
    live_y = ((Yb & ABS) < EXP) & ((Yb & ABS) != 0)
    out = np.empty(ii.shape[0])
    for t, (i, j) in enumerate(zip(ii, jj)):
        use = np.flatnonzero(live_x[i] & live_y[j])
        prod = mx[i, use].astype(object) * my[j, use].astype(object)  # exact Python ints
        terms = prod << (ex[i, use] + ey[j, use] - 2).astype(object)
        negative = (Xb[i, use] ^ Yb[j, use]) < 0
        out[t] = rounded(int(terms[~negative].sum()) - int(terms[negative].sum()))
    return out


def fma(a: float, b: float, c: float) -> float:
    """``a b + c`` rounded once (IEEE 754 ``fusedMultiplyAdd``) for finite doubles.

    The exact value is a :class:`~fractions.Fraction` (products and sums of doubles are
    exact rationals), rounded by ``float()`` (module docstring), or ``+-inf`` from the
    overflow threshold on. An exact zero is ``+0.0`` unless ``a b`` and ``c`` are both
    zeros of negative sign (IEEE's rule for the sign of an exact zero sum, round to
    nearest); a nonzero value that rounds to zero keeps its sign.
    """
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        negative = (math.copysign(1.0, a) * math.copysign(1.0, b) < 0
                    and math.copysign(1.0, c) < 0)
        return -0.0 if negative else 0.0
    if abs(exact) >= _LIMIT:
        return math.copysign(math.inf, exact)
    return float(exact)

"""The small-product path: Dot2 with an exact ``e = fma(a, b, -p)``, ``|A||B|``, and
the per-entry conditions (:mod:`ozaki.core.compensated` has the maths and the bound).

Per entry, in order of ``l``, the compiled kernel evaluates ``p = fl(a b)``,
``e = fma(a, b, -p)``, ``t = fl(s + p)``, ``z = fl(t - s)``,
``q = fl(fl(s - fl(t - z)) + fl(p - z))``, ``s = t``, ``c = fl(c + fl(q + e))``, and
returns ``fl(s + c)``. Here the same operations run on all entries at once, one ``l`` at
a time. numpy has no FMA, so ``e`` is formed by :func:`product_error`, which gives the
correctly rounded ``a b - p`` (what the FMA returns) on every input.
"""

from __future__ import annotations

import numpy as np

from ...core.compensated import OVERFLOW, SAFE, UNDERFLOW
from .exact import fma

__all__ = ["product_error", "dot2", "abs_product", "small_lines"]

#: Veltkamp's splitting constant for doubles, ``2**27 + 1``.
_SPLITTER = 134217729.0


def product_error(a: np.ndarray, b: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``fma(a, b, -p)`` for ``p = fl(a b)``, elementwise (``a``, ``b``, ``p`` of one shape).

    * Where both factors are normal, below ``2**995`` (so ``2**27 a`` cannot overflow)
      and their exponents add up to a product in ``[2**-960, 2**1020)``: Veltkamp's
      split ``a = ah + al`` (26-bit halves) and Dekker's
      ``e = (((ah bh - p) + ah bl) + al bh) + al bl``. Every value involved is a multiple
      of ``ulp(a) ulp(b) >= 2**-1064`` below ``2**1022``, so no operation under- or
      overflows and Dekker's proof applies: ``e = a b - p`` exactly, which is also what
      the FMA returns (the exact value, representable, rounded once is itself), ``+0.0``
      when it is zero in both (``x - x`` and sums of such zeros).
    * A zero factor (the other finite): ``a b`` is an exact zero of the sign of ``p``,
      and ``-p`` has the other sign: the FMA gives ``+0.0``.
    * A non-finite factor: the FMA gives NaN (``inf - inf``, ``inf 0`` or a NaN operand),
      as does ``a b - p``.
    * Finite factors whose product overflows (``p = +-inf``): the finite exact ``a b``
      plus ``-p`` is ``-p``.
    * Any other finite entry (a subnormal factor, a product near the underflow or the
      overflow threshold): the exactly rounded :func:`ozaki.backends.numpy.exact.fma`,
      one entry at a time (few entries in practice).
    """
    with np.errstate(all="ignore"):
        finite = np.isfinite(a) & np.isfinite(b)
        ma, ea = np.frexp(a)
        mb, eb = np.frexp(b)
        ab, bb = np.abs(a), np.abs(b)
        safe = (finite & (ab >= 2.0 ** -1022) & (bb >= 2.0 ** -1022) & (ab < 2.0 ** 995)
                & (bb < 2.0 ** 995) & (ea + eb >= -958) & (ea + eb <= 1020))
        ga = _SPLITTER * a
        ah = ga - (ga - a)
        al = a - ah
        gb = _SPLITTER * b
        bh = gb - (gb - b)
        bl = b - bh
        e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl
        e = np.where(safe, e, np.where(finite, 0.0, a * b - p))
        e = np.where(finite & ~np.isfinite(p), -p, e)
    rest = finite & ~safe & np.isfinite(p) & (a != 0.0) & (b != 0.0)
    if rest.any():
        e = np.array(e)
        for at in zip(*np.nonzero(rest)):
            e[at] = fma(float(a[at]), float(b[at]), -float(p[at]))
    return e


def _stacks(A, B, b: int):
    """``A`` (ba, m, k), ``B`` (bb, k, n) as float64 stacks of ``b`` slices (a stack of
    one is shared: slice ``g`` of a stack of ``x`` reads ``min(g, x - 1)``)."""
    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    return (np.broadcast_to(A, (b,) + A.shape[1:]), np.broadcast_to(B, (b,) + B.shape[1:]))


def dot2(A, B, out) -> None:
    """``out = A @ B`` by Dot2, entry by entry in order of ``l`` (module docstring).

    Parameters
    ----------
    A : ndarray, shape (ba, m, k)
    B : ndarray, shape (bb, k, n)
        Real stacks; ``ba`` and ``bb`` are 1 (shared) or ``b``.
    out : ndarray, shape (b, m, n)
        Receives the products.
    """
    b, m, n = out.shape
    A, B = _stacks(A, B, b)
    s = np.zeros((b, m, n))
    c = np.zeros((b, m, n))
    with np.errstate(all="ignore"):
        for l in range(A.shape[2]):
            a, y = np.broadcast_arrays(A[:, :, l, None], B[:, None, l, :])
            p = a * y
            e = product_error(a, y, p)
            t = s + p
            z = t - s
            q = (s - (t - z)) + (p - z)
            s = t
            c = c + (q + e)
        out[...] = s + c


def abs_product(A, B, out) -> None:
    """``out = fl(|A| |B|)``: ``o = 0``, then ``o = fl(o + fl(|a| |b|))`` in order of ``l``."""
    b, m, n = out.shape
    A, B = _stacks(A, B, b)
    o = np.zeros((b, m, n))
    with np.errstate(all="ignore"):
        for l in range(A.shape[2]):
            o = o + np.abs(A[:, :, l, None]) * np.abs(B[:, None, l, :])
    out[...] = o


def _exponents(X: np.ndarray, axis: int):
    """``(emax, emin, bad)`` per line (rows ``axis`` 0, columns 1) of ``X`` (b, r, c):
    the largest biased exponent over finite entries (0 if none), the smallest over
    finite nonzero ones (2047 if none; 0 for a subnormal), an Inf or NaN flag. Integer
    maxima and minima: exact in any order."""
    X = np.ascontiguousarray(X, np.float64)
    e = (X.view(np.int64) >> 52) & 0x7FF
    finite = e != 0x7FF
    over = 2 if axis == 0 else 1
    emax = np.where(finite, e, 0).max(axis=over, initial=0)
    emin = np.where(finite & (X != 0.0), e, 2047).min(axis=over, initial=2047)
    return emax, emin, (~finite).any(axis=over)


def small_lines(A, B, b: int):
    """``(codes, rare, bad_a, bad_b)``: Dot2's per-entry conditions for ``b`` slices.

    With ``lk = ceil(log2 k)`` and the lines' exponent ranges (:func:`_exponents`),
    entry ``(i, j)`` is :data:`~ozaki.core.compensated.OVERFLOW` when
    ``amax_i + bmax_j + lk > 2044 + 1021``, else :data:`~ozaki.core.compensated.UNDERFLOW`
    when ``amin_i + bmin_j < 2046 - 900``, else :data:`~ozaki.core.compensated.SAFE`
    (integer comparisons). ``rare``: some entry is not SAFE or some line holds an Inf
    or a NaN.

    Parameters
    ----------
    A : ndarray, shape (ba, m, k)
    B : ndarray, shape (bb, k, n)
        Real stacks; ``ba`` and ``bb`` are 1 (shared) or ``b``.
    b : int
        Slices of the product.

    Returns
    -------
    codes : ndarray of int8, shape (b, m, n)
    rare : bool
    bad_a, bad_b : ndarray of bool, shapes (ba, m) and (bb, n)
        The lines of ``A`` and ``B`` that hold an Inf or a NaN.
    """
    amax, amin, abad = _exponents(A, 0)
    bmax, bmin, bbad = _exponents(B, 1)
    k = np.shape(A)[2]
    lk = 0
    while (1 << lk) < k:
        lk += 1
    m, n = amax.shape[1], bmax.shape[1]
    ah, al = (np.broadcast_to(x, (b, m))[:, :, None] for x in (amax, amin))
    bh, bl = (np.broadcast_to(x, (b, n))[:, None, :] for x in (bmax, bmin))
    codes = np.where(ah + bh + lk > 2044 + 1021, OVERFLOW,
                     np.where(al + bl < 2046 - 900, UNDERFLOW, SAFE)).astype(np.int8)
    rare = bool((codes != SAFE).any() or abad.any() or bbad.any())
    return codes, rare, abad, bbad

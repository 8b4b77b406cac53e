"""The small-product path's compiled kernels: Dot2 with an explicit FMA, its conditions.

The maths, the conditions and the bound are in :mod:`ozaki.core.compensated`; these
kernels compute them (no ``fastmath``: each entry's IEEE operations in the order
written, the one FMA explicit).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ...core.compensated import OVERFLOW, SAFE, UNDERFLOW
from .parallel import run

__all__ = ["dot2", "abs_product", "small_lines", "unsafe_entries"]


@intrinsic
def _fma(typingctx, a, b, c):
    """``fma(a, b, c)``: ``a b + c`` rounded once (LLVM's ``llvm.fma``, always fused)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)
    return sig, codegen


@nb.njit(cache=True)
def _exponents(X, axis):
    """Each line's exponent range: ``(emax, emin, bad)``, each (b, lines).

    Lines are the rows (``axis`` 0) or columns (1) of every slice of ``X`` (b, r, c),
    C-ordered: the largest biased exponent over finite entries, the smallest over
    finite nonzero ones (2047 when there is none; 0 for a subnormal), and whether the
    line holds an Inf or a NaN.
    """
    b, r, c = X.shape
    n = r if axis == 0 else c
    emax = np.zeros((b, n), np.int64)
    emin = np.full((b, n), 2047, np.int64)
    bad = np.zeros((b, n), np.bool_)
    bits = X.view(np.int64)
    for g in range(b):
        for i in range(r):
            for j in range(c):
                e = (bits[g, i, j] >> 52) & 0x7FF
                line = i if axis == 0 else j
                if e == 0x7FF:
                    bad[g, line] = True
                else:
                    if e > emax[g, line]:
                        emax[g, line] = e
                    if X[g, i, j] != 0.0 and e < emin[g, line]:
                        emin[g, line] = e
    return emax, emin, bad


@nb.njit(nogil=True, cache=True)
def _dot2_rows(t0, t1, A, B, C):
    """Rows ``t0:t1`` (flattened over the stack) of ``C = A @ B`` by Dot2.

    ``A`` (ba, m, k), ``B`` (bb, k, n) with ``ba``, ``bb`` 1 (shared) or ``b``. Per
    entry, in order of ``l``: ``p = fl(a b)``, ``e = fma(a, b, -p)`` (exact),
    ``t = fl(s + p)``, ``q`` its TwoSum error (exact), ``c = fl(c + fl(q + e))``; the
    entry is ``fl(s + c)``. The loop over a row's columns vectorises: the columns are
    independent accumulators.
    """
    m, k = A.shape[1], A.shape[2]
    n = B.shape[2]
    ba, bb = A.shape[0], B.shape[0]
    s = np.empty(n)
    c = np.empty(n)
    for task in range(t0, t1):
        g = task // m
        i = task - g * m
        ga, gb = min(g, ba - 1), min(g, bb - 1)
        for j in range(n):
            s[j] = 0.0
            c[j] = 0.0
        for l in range(k):
            a = A[ga, i, l]
            row = B[gb, l]
            for j in range(n):
                p = a * row[j]
                e = _fma(a, row[j], -p)
                sj = s[j]
                t = sj + p
                z = t - sj
                q = (sj - (t - z)) + (p - z)
                s[j] = t
                c[j] += q + e
        o = C[g, i]
        for j in range(n):
            o[j] = s[j] + c[j]


@nb.njit(nogil=True, cache=True)
def _abs_rows(t0, t1, A, B, M):
    """Rows ``t0:t1`` of ``M = fl(|A| |B|)`` in order of ``l`` (finite entries, no NaN)."""
    m, k = A.shape[1], A.shape[2]
    n = B.shape[2]
    ba, bb = A.shape[0], B.shape[0]
    for task in range(t0, t1):
        g = task // m
        i = task - g * m
        ga, gb = min(g, ba - 1), min(g, bb - 1)
        o = M[g, i]
        for j in range(n):
            o[j] = 0.0
        for l in range(k):
            a = abs(A[ga, i, l])
            row = B[gb, l]
            for j in range(n):
                o[j] += a * abs(row[j])


@nb.njit(cache=True)
def unsafe_entries(amax, amin, bmax, bmin, k, mask):
    """Mark in ``mask`` (b, m, n) the entries where Dot2's conditions may fail.

    With biased exponents (``|x| < 2**(e - 1022)``, ``|x| >= 2**(e - 1023)`` for
    normal ``x``; ``amax``/``amin`` (ba, m) of ``A``'s rows, ``bmax``/``bmin`` (bb, n)
    of ``B``'s columns, from :func:`_exponents`, ``ba``/``bb`` 1 or ``b``), entry
    ``(i, j)`` is safe when

    * nothing overflows: every product and partial sum is below
      ``k 2**(ea + eb - 2044) <= 2**1021``;
    * no product underflows: every nonzero ``|a b| >= 2**(ea + eb - 2046) >= 2**-900``,
      so ``fma(a, b, -p)`` is exact (it needs ``e_a + e_b >= -969``, Boldo and
      Muller; a subnormal operand, ``e = 0``, fails this).

    Sums never lose bits to underflow (a sum in the subnormal range is exact), so
    these are all the conditions of Proposition 5.5. ``mask`` receives
    :data:`OVERFLOW` where the first fails, else :data:`UNDERFLOW` where the second
    does, else :data:`SAFE`. Returns the counts ``(underflow, overflow)``.
    """
    b, m, n = mask.shape
    lk = 0
    while (1 << lk) < k:
        lk += 1
    under = 0
    over = 0
    for g in range(b):
        ga, gb = min(g, amax.shape[0] - 1), min(g, bmax.shape[0] - 1)
        for i in range(m):
            ah, al = amax[ga, i], amin[ga, i]
            for j in range(n):
                bh, bl = bmax[gb, j], bmin[gb, j]
                top = ah + bh + lk > 2044 + 1021
                low = al + bl < 2046 - 900
                code = OVERFLOW if top else (UNDERFLOW if low else SAFE)
                mask[g, i, j] = code
                under += code == UNDERFLOW
                over += code == OVERFLOW
    return under, over


@nb.njit(nogil=True, cache=True)
def _prepare(A, B, b):
    """:func:`_exponents` of ``A``'s rows and ``B``'s columns, and :func:`unsafe_entries`
    for ``b`` slices, in one compiled call (a small product pays each call's dispatch).
    ``rare``: some entry is not :data:`SAFE` or some line holds an Inf or a NaN."""
    amax, amin, abad = _exponents(A, 0)
    bmax, bmin, bbad = _exponents(B, 1)
    codes = np.empty((b, A.shape[1], B.shape[2]), np.int8)
    under, over = unsafe_entries(amax, amin, bmax, bmin, A.shape[2], codes)
    special = False
    for x in abad.ravel():
        special |= x
    for x in bbad.ravel():
        special |= x
    return codes, under + over > 0 or special, abad, bbad


@nb.njit(nogil=True, cache=True)
def _serial(A, B, C):
    """:func:`_prepare` and every row of :func:`_dot2_rows` in one call (a tiny product);
    whether some entry is unsafe or some line holds an Inf or a NaN."""
    rare = _prepare(A, B, C.shape[0])[1]
    _dot2_rows(0, C.shape[0] * C.shape[1], A, B, C)
    return rare


def small_lines(A, B, b: int):
    """:func:`_prepare`: ``(codes, rare, bad_a, bad_b)`` for ``b`` slices."""
    return _prepare(A, B, b)


def dot2(A, B, out, lines: bool, threads: int | None = None):
    """``out = A @ B`` by Dot2; ``(rare, lines or None)`` (:meth:`ozaki.core.backend.Backend.dot2`).

    ``threads`` 1 runs everything on the calling thread (a tiny product: one compiled
    call when ``lines`` is not wanted).
    """
    b, m = out.shape[:2]
    if threads == 1 and not lines:
        return _serial(A, B, out), None
    got = _prepare(A, B, b)
    run(_dot2_rows, b * m, A, B, out, max_threads=threads)
    return got[1], got


def abs_product(A, B, out, threads: int | None = None) -> None:
    """``out = fl(|A| |B|)``, terms added in order of ``l``."""
    run(_abs_rows, out.shape[0] * out.shape[1], A, B, out, max_threads=threads)

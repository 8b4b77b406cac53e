"""Step 4, the Chinese Remainder reconstruction, and the exact power-of-two scaling.

:func:`reconstruct` turns the stored residues of the N modular products into the
product, entry by entry, in registers; :func:`ldexp` scales by ``2**e`` with one
rounding. Both compiled with numba under the same rules as :mod:`ozaki.kernels`
(no fastmath, fixed order per output, one thread per output).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import _CACHE, POW2, _rint

__all__ = ["ldexp", "reconstruct"]


@nb.njit(inline="always")
def ldexp(y, e):
    """``y * 2**e`` rounded once, for integer-valued ``|y| < 2**960``.

    One multiplication by a normal power of two when ``e`` is in range; for
    ``e < -1022`` the first step ``y * 2**-1022`` is exact (``|y| >= 1``) and the
    second rounds once; below ``e = -2044`` the result is 0 (``|y| < 2**960``).
    For ``e > 1023`` a nonzero ``y`` overflows.
    """
    if e >= -1022:
        if e <= 1023:
            return y * POW2[e + 1022]
        return y * POW2[2045] * POW2[2045]
    if e >= -2044:
        return (y * POW2[0]) * POW2[e + 2044]
    return (y * POW2[0]) * POW2[0]


@nb.njit(parallel=True, cache=_CACHE)
def reconstruct(R, W, p_levels, p_inv, srow, scol, out):
    """CRT: ``out[g, i, j] = (C'_gij, symmetric mod P) * 2**-(srow[g, i] + scol[g, j])``.

    ``R`` (N, b, m, n) holds the residues ``C_t`` of the N modular products and
    ``W`` (N, L) the exact level parts of the CRT weights. Per entry, in
    registers and in a fixed order: ``S_l = sum_t W[t, l] C_t`` (exact, see
    :mod:`ozaki.moduli`), ``q = rint(sum_l S_l / P)`` (exact thanks to the range
    margin), ``D_l = S_l - q P_l`` (exact), and ``sum_l D_l == C'`` exactly (the
    level tails are below half a unit). The sum is formed with error-free
    TwoSum: correctly rounded for one or two levels, faithful (error below one
    ulp, in practice correctly rounded) for more. The power-of-two scaling
    rounds once more only when the result is subnormal.
    """
    N, L = W.shape
    b, m, n = out.shape
    tile = min(n, 512)  # columns per task: the level sums stay in L1 however wide the row
    tiles = (n + tile - 1) // tile if n else 0
    for task in nb.prange(b * m * tiles):
        gi = task // tiles
        j0 = (task - gi * tiles) * tile
        w_ = min(tile, n - j0)
        g = gi // m
        i = gi - g * m
        si = srow[g, i]
        S = np.zeros((L, tile))
        for t in range(N):
            for lv in range(L):
                w = W[t, lv]
                for j in range(w_):
                    S[lv, j] += w * float(R[t, g, i, j0 + j])
        # The same arithmetic per entry, written as loops over j (vectorised).
        q = np.zeros(tile)
        for lv in range(L):
            for j in range(w_):
                q[j] += S[lv, j] * p_inv
        hi = np.empty(tile)
        lo = np.zeros(tile)
        for j in range(w_):
            q[j] = _rint(q[j])
            hi[j] = S[0, j] - q[j] * p_levels[0]
        for lv in range(1, L):
            pl = p_levels[lv]
            for j in range(w_):
                d = S[lv, j] - q[j] * pl
                s = hi[j] + d
                bb = s - hi[j]
                lo[j] += (hi[j] - (s - bb)) + (d - bb)
                hi[j] = s
        for j in range(w_):
            out[g, i, j0 + j] = ldexp(hi[j] + lo[j], -(si + scol[g, j0 + j]))

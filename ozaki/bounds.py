"""The compiled passes of the accurate-mode bound: the upper bound ``U`` and the certificate.

``U_ij = G_ij + rF_i + cF_j + min(nA_i, nB_j)`` bounds ``sum_l alpha_il beta_lj``
from the exact floor GEMM ``G`` (:mod:`ozaki.scaling`); the shifts come from its
row and column maxima, the certificate (:mod:`ozaki.certify`) from its entries.
All data are stacks: ``G`` (b, m, n), row data (b, m), column data (b, n).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import _CACHE, COLUMN_CHUNK, POW2, column_chunk
from .reconstruct import ldexp

__all__ = ["upper", "upper_rowmax", "upper_scaled_colmax", "componentwise_ratios"]


@nb.njit(inline="always")
def upper(G, rF, cF, nA, nB, g, i, j):
    """Upper bound of ``sum_l alpha_il beta_lj`` (slice ``g``) from the floor GEMM ``G``.

    With ``alpha = F + phi`` (``F = floor(alpha)``, ``0 <= phi < 1``, ``phi = 0``
    where ``a = 0``): ``alpha beta <= F_a F_b + F_a [b != 0] + [a != 0] F_b +
    [a != 0][b != 0]``, summed: ``G + rF_i + cF_j + min(nA_i, nB_j)``
    (row and column sums of the floors, and nonzero counts). Exact integers.
    """
    if nA[g, i] == 0 or nB[g, j] == 0:
        return 0.0
    return G[g, i, j] + rF[g, i] + cF[g, j] + float(min(nA[g, i], nB[g, j]))


@nb.njit(parallel=True, cache=_CACHE)
def upper_rowmax(G, rF, cF, nA, nB):
    """``max_j upper_gij`` per row, shape (b, m) (exact; integer maxima)."""
    b, m, n = G.shape
    out = np.zeros((b, m))
    for gi in nb.prange(b * m):
        g = gi // m
        i = gi - g * m
        best = 0.0
        for j in range(n):
            v = upper(G, rF, cF, nA, nB, g, i, j)
            if v > best:
                best = v
        out[g, i] = best
    return out


@nb.njit(parallel=True, cache=_CACHE)
def upper_scaled_colmax(G, rF, cF, nA, nB, sigma):
    """``max_i upper_gij * 2**sigma[g, i]`` per column, shape (b, n); exact (powers of two)."""
    b, m, n = G.shape
    out = np.zeros((b, n))
    nchunks = (n + COLUMN_CHUNK - 1) // COLUMN_CHUNK
    for gc in nb.prange(b * nchunks):
        g, j0, j1 = column_chunk(gc, nchunks, n)
        for i in range(m):
            f = POW2[sigma[g, i] + 1022]
            for j in range(j0, j1):
                v = upper(G, rF, cF, nA, nB, g, i, j) * f
                if v > out[g, j]:
                    out[g, j] = v
    return out


@nb.njit(parallel=True, cache=_CACHE)
def componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety, ratio, bound,
                         probe):
    """Per-entry ratio of the certified bound to the target (see :mod:`ozaki.certify`).

    A stack of ``b`` products: ``G`` (b, m, n), row data (b, m), column data
    (b, n), the plan terms ``R``, ``g2`` per slice (b,). Returns per-row maxima
    of the ratio and per-row counts of entries above 1, shapes (b, m); writes
    ``ratio`` (per entry) and ``bound`` (the absolute term ``(1+u)(T + 2**-(s+t)
    R) + 2**-1075``, unscaled) when they have entries. Entries whose upper bound
    vanishes are exact zeros: ratio 0. With ``probe`` only whether a slice has
    a failing entry is wanted: rows stop once one is found in their slice, so
    the counts are then exact only in being nonzero (whichever row finds it).
    """
    b, m, n = G.shape
    rowmax = np.zeros((b, m))
    rowfail = np.zeros((b, m), np.int64)
    found = np.zeros(b, np.bool_)
    fill_ratio = ratio.shape[0] > 0
    fill_bound = bound.shape[0] > 0
    for gi in nb.prange(b * m):
        g = gi // m
        i = gi - g * m
        if probe and found[g]:
            continue
        ps = POW2[-sigma[g, i] + 1022]
        worst = 0.0
        fails = 0
        for j in range(n):
            up = upper(G, rF, cF, nA, nB, g, i, j)
            if up == 0.0:
                r = 0.0
                if fill_bound:
                    bound[g, i, j] = 0.0
            else:
                pt = POW2[-tau[g, j] + 1022]
                c = float(min(nA[g, i], nB[g, j]))
                trunc = min(ps * (cF[g, j] + c) + pt * (rF[g, i] + c), 2.0 * up)
                # 2**-1075 (the subnormal scale-back) in the units 2**-(e_i + f_j);
                # below 2**-100 of a unit it is far under u * G_ij >= 2**-53 (kept
                # rigorous by rounding it up to 2**-100)
                ef = e[g, i] + f[g, j] - 1075
                sub = ldexp(1.0, ef) if ef > -100 else 2.0 ** -100
                num = ((1.0 + 2.0 ** -53) * (trunc + (ps * pt) * R[g]) + 2.0 * g2[g] * up
                       + sub) * safety
                low = G[g, i, j]
                r = num / (2.0 ** -53 * low) if low > 0.0 else np.inf
                if fill_bound:
                    # + the smallest subnormal covers a rounding of ldexp there
                    bound[g, i, j] = ldexp(num, -(e[g, i] + f[g, j])) + 5e-324
            if r > worst:
                worst = r
            if r > 1.0:
                fails += 1
                if probe:
                    found[g] = True
                    break
            if fill_ratio:
                ratio[g, i, j] = r
        rowmax[g, i] = worst
        rowfail[g, i] = fails
    return rowmax, rowfail

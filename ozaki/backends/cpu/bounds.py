"""The compiled passes of the accurate-mode bound: the upper bound ``U`` and the certificate.

``U_ij = G_ij + rF_i + cF_j + min(nA_i, nB_j)`` bounds ``sum_l alpha_il beta_lj``
from the exact floor GEMM ``G`` (:mod:`ozaki.core.scaling`); the shifts come from its
row and column maxima, the certificate (:mod:`ozaki.core.certify`) from its entries.
All data are stacks: ``G`` (b, m, n), row data (b, m), column data (b, n).

The passes that depend on the moduli count take ``K`` counts at once (shifts
(K, b, m) and (K, b, n), plan terms (K, b)): each row of ``G`` is read from
memory once and serves every count from cache. The column data are first copied
into contiguous FP64 tables (:func:`_columns`), so the loops over a row's columns
compile to SIMD code. Vectorising changes no bit: every value is formed by the
same IEEE operations in the same order as the scalar formula (no ``fastmath``,
so no FMA and no reassociation), branches become selects between values that are
both computed (``error_model="numpy"``: a division never raises, and a quotient
by zero is discarded), and maxima and counts do not depend on the order.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import CACHE, POW2, column_chunk, column_chunks
from .parallel import run
from .reconstruct import ldexp

__all__ = ["upper", "upper_rowmax", "upper_scaled_colmax", "componentwise_ratios",
           "normwise_maxima"]

#: Columns of a row that a pass forms in a scratch block before reducing them.
_BLOCK = 1024
#: Rows per task of :func:`componentwise_ratios` (with a chunk of columns).
_ROWS = 256


@nb.njit(inline="always")
def upper(Gij, rFi, cFj, ni, nj):
    """Upper bound of ``sum_l alpha_il beta_lj`` from the floor GEMM entry ``Gij``, row ``ni > 0``.

    With ``alpha = F + phi`` (``F = floor(alpha)``, ``0 <= phi < 1``, ``phi = 0``
    where ``a = 0``): ``alpha beta <= F_a F_b + F_a [b != 0] + [a != 0] F_b +
    [a != 0][b != 0]``, summed: ``G + rF_i + cF_j + min(nA_i, nB_j)`` (row and
    column sums of the floors; ``ni``, ``nj`` the nonzero counts as floats, exact
    below ``2**53``). Exact integers; 0 on an all-zero column. The callers skip
    all-zero rows (``ni == 0``: ``U = 0`` on the whole row).
    """
    return Gij + rFi + cFj + min(ni, nj) if nj > 0.0 else 0.0


def _columns(cF, nB):
    """Contiguous copies ``(cF, float(nB))`` of the column data, shapes (b, n) (exact)."""
    return (np.ascontiguousarray(cF, dtype=np.float64),
            np.ascontiguousarray(nB, dtype=np.float64))  # counts below 2**53


@nb.njit(nogil=True, cache=CACHE)
def _max_over_chunks(t0, t1, part, out):
    """``out[..., g, i] = max(0, max_c part[..., g, c, i])`` for the slices ``g`` in ``t0:t1``
    (part (K, b, nchunks, m), out (K, b, m); exact, order-free)."""
    K, _, nchunks, m = part.shape
    for g in range(t0, t1):
        for q in range(K):
            for c in range(nchunks):
                for i in range(m):
                    v = part[q, g, c, i]
                    out[q, g, i] = v if v > out[q, g, i] else out[q, g, i]


#: Lanes of partial maxima (:func:`_row_max`, :func:`_lane_max`).
_LANES = 64


@nb.njit(inline="always")
def _lane_max(x, j0, j1, acc, best):
    """``max(best, max(x[j0:j1]))`` for non-negative ``x``, in :data:`_LANES` lanes.

    Lane ``l`` keeps the maximum of the entries ``j0 + l (mod _LANES)``
    (``acc``, scratch); the compiler unrolls the lanes into independent
    registers, where one running maximum would wait on each comparison. Maxima
    do not depend on the grouping. Indices are unsigned (see :func:`_ratio_block`).
    """
    lanes = np.uint64(_LANES)
    j = np.uint64(j0)
    end = np.uint64(j1)
    for lane in range(min(lanes, end - j)):
        acc[lane] = 0.0
    while j + lanes <= end:
        for lane in range(lanes):
            v = x[j + lane]
            acc[lane] = v if v > acc[lane] else acc[lane]
        j += lanes
    for lane in range(end - j):
        v = x[j + lane]
        acc[lane] = v if v > acc[lane] else acc[lane]
    for lane in range(min(lanes, end - np.uint64(j0))):
        best = acc[lane] if acc[lane] > best else best
    return best


@nb.njit(inline="always")
def _row_max(Gr, rFi, cg, ng, ni, j0, j1, u, acc):
    """``max_j U_ij`` over the columns ``j0:j1`` of one row (0 if none), ``ni > 0``.

    ``U`` is formed a block of ``len(u)`` columns at a time into ``u`` (scratch,
    in L1) and reduced by :func:`_lane_max`.
    """
    best = 0.0
    for b0 in range(j0, j1, u.shape[0]):
        w = min(u.shape[0], j1 - b0)
        B0 = np.uint64(b0)
        for j in range(np.uint64(0), np.uint64(w)):
            u[j] = upper(Gr[B0 + j], rFi, cg[B0 + j], ni, ng[B0 + j])
        best = _lane_max(u, 0, w, acc, best)
    return best


@nb.njit(nogil=True, cache=CACHE)
def _rowmax_chunks(t0, t1, G, rF, cf, nbf, nA, part, nchunks, width):
    """Tasks ``t0:t1`` of :func:`upper_rowmax`: a chunk of columns, all the rows of a slice."""
    m, n = G.shape[1], G.shape[2]
    for gc in range(t0, t1):
        g, j0, j1 = column_chunk(gc, nchunks, n, width)
        c = gc - g * nchunks
        u = np.empty(min(_BLOCK, max(1, j1 - j0)))
        acc = np.empty(_LANES)
        for i in range(m):
            ni = float(nA[g, i])
            if ni > 0.0:  # an all-zero row: U = 0
                part[0, g, c, i] = _row_max(G[g, i], rF[g, i], cf[g], nbf[g], ni, j0, j1, u,
                                            acc)


def upper_rowmax(G, rF, cF, nA, nB):
    """``max_j U_gij`` per row, shape (b, m) (exact; integer maxima).

    Tasks are chunks of columns (:func:`ozaki.backends.cpu.kernels.column_chunks`) with all
    the rows of a slice, so a chunk's column data stay in cache through the
    rows; the chunks' maxima are then combined (exact in any order).
    """
    b, m, n = G.shape
    cf, nbf = _columns(cF, nB)
    width, nchunks = column_chunks(n)
    part = np.zeros((1, b, nchunks, m))
    run(_rowmax_chunks, b * nchunks, G, rF, cf, nbf, nA, part, nchunks, width)
    out = np.zeros((1, b, m))
    run(_max_over_chunks, b, part, out)
    return out[0]


@nb.njit(nogil=True, cache=CACHE)
def _colmax_chunks(t0, t1, G, rF, cf, nA, nbf, sigma, out, nchunks, width):
    """Tasks ``t0:t1`` of :func:`upper_scaled_colmax`: a chunk of columns of a slice."""
    K, m, n = sigma.shape[0], G.shape[1], G.shape[2]
    for gc in range(t0, t1):
        g, j0, j1 = column_chunk(gc, nchunks, n, width)
        u = np.empty(j1 - j0)
        cg, ng = cf[g], nbf[g]
        J0, J1 = np.uint64(j0), np.uint64(j1)  # unsigned: see _ratio_block
        for i in range(m):
            ni, rFi, Gr = float(nA[g, i]), rF[g, i], G[g, i]
            if ni == 0.0:
                continue  # U = 0 on the row: no column maximum grows
            for j in range(J0, J1):
                u[j - J0] = upper(Gr[j], rFi, cg[j], ni, ng[j])
            for q in range(K):
                f = POW2[sigma[q, g, i] + 1022]
                o = out[q, g]
                for j in range(J0, J1):
                    v = u[j - J0] * f
                    o[j] = v if v > o[j] else o[j]


def upper_scaled_colmax(G, rF, cF, nA, nB, sigma):
    """``max_i U_gij * 2**sigma[q, g, i]`` per column, shape (K, b, n), for ``K`` sets of shifts.

    Exact (scalings by powers of two of integers); one pass over ``G`` serves
    every ``q``: a row's ``U`` is formed once per chunk of columns.
    """
    K, b, m = sigma.shape
    n = G.shape[2]
    cf, nbf = _columns(cF, nB)
    out = np.zeros((K, b, n))
    width, nchunks = column_chunks(n)
    run(_colmax_chunks, b * nchunks, G, rF, cf, nA, nbf, sigma, out, nchunks, width)
    return out


@nb.njit(inline="always")
def _ratio_block(G, cf, nbf, pt, f, bound, g, i, q, ni, rFi, ps, R, g2, safety, ei, j0, j1,
                 out, o0, general, fill_bound):
    """Ratios of row ``i`` of slice ``g``, columns ``j0:j1``, into ``out[j - o0]``.

    ``Gr``, ``cg``, ``ng``, ``pt``: the row's ``G``, ``cF``, ``float(nB)`` and
    ``2**-tau``. Returns the count of ratios above 1. The column indices are
    unsigned (``np.uint64``): numba then emits no negative-index fix-ups, which
    would keep the loop from vectorising. Without ``general`` the subnormal term
    is ``2**-100`` on every entry (the caller checked ``e_i + max_j f_j - 1075 <=
    -100``), which leaves the loop free of table look-ups; with it, the term is
    formed per entry and, with ``fill_bound``, ``bound`` receives the absolute
    bounds. Zero bounds give ratio 0.
    """
    fails = 0
    for j in range(j0, j1):
        nj = nbf[g, j]
        low = G[g, i, j]
        up = upper(low, rFi, cf[g, j], ni, nj)
        c = min(ni, nj)
        sub = 2.0 ** -100
        if general:
            # 2**-1075 (the subnormal scale-back) in the units 2**-(e_i + f_j);
            # below 2**-100 of a unit it is far under u * G_ij >= 2**-53 (kept
            # rigorous by rounding it up to 2**-100)
            ef = ei + f[g, j] - 1075
            if ef > -100:
                sub = ldexp(1.0, ef)
        trunc = min(ps * (cf[g, j] + c) + pt[q, g, j] * (rFi + c), 2.0 * up)
        num = ((trunc + (ps * pt[q, g, j]) * R) + 2.0 * g2 * up + sub) * safety
        r = num / (2.0 ** -53 * low) if low > 0.0 else np.inf
        r = r if nj > 0.0 else 0.0  # U = 0 exactly where nj = 0 (ni > 0)
        out[j - o0] = r
        fails += r > 1.0
        if general and fill_bound:
            # + the smallest subnormal covers a rounding of ldexp there
            bound[g, i, j] = ldexp(num, -(ei + f[g, j])) + 5e-324 if nj > 0.0 else 0.0
    return fails


@nb.njit(nogil=True, cache=CACHE)
def _column_terms(t0, t1, f, tau, fmax, pt):
    """Slices ``t0:t1`` of :func:`componentwise_ratios`' column terms: ``max_j f`` and
    ``2**-tau`` (exact)."""
    K, n = tau.shape[0], tau.shape[2]
    for g in range(t0, t1):
        top = -(1 << 62)
        for j in range(n):
            top = max(top, f[g, j])
        fmax[g] = top
        for q in range(K):
            for j in range(n):
                pt[q, g, j] = POW2[-tau[q, g, j] + 1022]


@nb.njit(nogil=True, error_model="numpy", cache=CACHE)
def _ratio_tasks(t0, t1, G, rF, cf, nA, nbf, sigma, R, g2, e, f, safety, ratio, bound, probe,
                 fmax, pt, partmax, partfail, found, rblocks, nchunks, width):
    """Tasks ``t0:t1`` of :func:`componentwise_ratios`: a block of rows by a chunk of columns."""
    K, m, n = sigma.shape[0], G.shape[1], G.shape[2]
    fill_ratio = ratio.shape[0] > 0
    fill_bound = bound.shape[0] > 0
    zero = np.uint64(0)
    for task in range(t0, t1):
        g = task // (rblocks * nchunks)
        rest = task - g * rblocks * nchunks
        r0 = (rest // nchunks) * _ROWS
        c = rest % nchunks
        _, c0, c1 = column_chunk(c, nchunks, n, width)
        buf = np.empty(min(_BLOCK, max(1, c1 - c0)))
        lanes = np.empty(_LANES)
        worst = np.zeros(K)
        fails = np.zeros(K, np.int64)
        live = np.zeros(K, np.bool_)
        for i in range(r0, min(m, r0 + _ROWS)):
            ni, rFi, ei = float(nA[g, i]), rF[g, i], e[g, i]
            general = ei + fmax[g] - 1075 > -100 or fill_bound
            for q in range(K):
                live[q] = not (probe[q] and found[q, g])
                worst[q] = 0.0
                fails[q] = 0
            if ni == 0.0 and live[0]:  # an all-zero row: exact zeros
                if fill_ratio:
                    ratio[g, i, c0:c1] = 0.0
                if fill_bound:
                    bound[g, i, c0:c1] = 0.0
            for j0 in range(c0, c1 if ni > 0.0 else c0, buf.shape[0]):
                j1 = min(c1, j0 + buf.shape[0])  # the counts share a block of G
                J0, J1 = np.uint64(j0), np.uint64(j1)
                for q in range(K):
                    if not live[q]:
                        continue
                    first = q == 0
                    out, o0 = (ratio[g, i], zero) if fill_ratio and first else (buf, J0)
                    ps = POW2[-sigma[q, g, i] + 1022]
                    Rq, gq = R[q, g], g2[q, g]
                    if general:  # two copies: each one's loop is fixed
                        fails[q] += _ratio_block(G, cf, nbf, pt, f, bound, g, i, q, ni, rFi,
                                                 ps, Rq, gq, safety, ei, J0, J1, out, o0, True,
                                                 fill_bound and first)
                    else:
                        fails[q] += _ratio_block(G, cf, nbf, pt, f, bound, g, i, q, ni, rFi,
                                                 ps, Rq, gq, safety, ei, J0, J1, out, o0, False,
                                                 False)
                    worst[q] = _lane_max(out, J0 - o0, J1 - o0, lanes, worst[q])
                    if probe[q] and fails[q] > 0:
                        live[q] = False  # this count's answer is known: the row stops
            for q in range(K):
                partmax[q, g, c, i] = worst[q]
                partfail[q, g, c, i] = fails[q]
                if probe[q] and fails[q] > 0:
                    found[q, g] = True


def componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety, ratio, bound,
                         probe):
    """Per-entry ratio of the certified bound to the target (:mod:`ozaki.core.certify`), ``K`` counts.

    A stack of ``b`` products: ``G`` (b, m, n), row data (b, m), column data
    (b, n); per count ``q`` the extra shifts ``sigma`` (K, b, m), ``tau`` (K, b, n)
    and the plan terms ``R``, ``g2`` (K, b). Returns per-row maxima of the ratio
    and per-row counts of entries above 1, shapes (K, b, m); one pass over ``G``
    serves every count. For the first count (``q = 0``) writes ``ratio`` (per
    entry) and ``bound`` (the absolute term ``(1+u)(T + 2**-(s+t) R) + 2**-1075``,
    unscaled) when they have entries. Entries whose upper bound vanishes are
    exact zeros: ratio 0. With ``probe[q]`` only whether a slice has a failing
    entry is wanted for count ``q``: a row stops it at its first failing block,
    and rows skip it once a row of their slice found one, so its counts are
    then exact only in being nonzero (whichever row finds it).
    """
    K, b, m = sigma.shape
    n = G.shape[2]
    cf, nbf = _columns(cF, nB)
    pt = np.empty((K, b, n))  # 2**-tau, exact
    fmax = np.empty(b, np.int64)
    run(_column_terms, b, f, tau, fmax, pt)
    # tasks: a chunk of columns (its column data stay in cache) and a block of rows;
    # each row's maximum and count per chunk, combined below (exact in any order)
    width, nchunks = column_chunks(n)
    rblocks = (m + _ROWS - 1) // _ROWS
    partmax = np.zeros((K, b, nchunks, m))
    partfail = np.zeros((K, b, nchunks, m), np.int64)
    found = np.zeros((K, b), np.bool_)
    run(_ratio_tasks, b * rblocks * nchunks, G, rF, cf, nA, nbf, sigma, R, g2, e, f, safety,
        ratio, bound, probe, fmax, pt, partmax, partfail, found, rblocks, nchunks, width)
    rowmax = np.zeros((K, b, m))
    run(_max_over_chunks, b, partmax, rowmax)
    return rowmax, partfail.sum(axis=2)


@nb.njit(nogil=True, cache=CACHE)
def _normwise_slices(t0, t1, E, zero, lo2, hi1, shift, xm, am):
    """Slices ``t0:t1`` of :func:`normwise_maxima`."""
    n = E.shape[1]
    for g in range(t0, t1):
        bx = 0.0 if n == 0 else -np.inf
        ba = bx
        for j in range(n):
            x, a = 0.0, 0.0
            if not zero[g, j]:
                lo = lo2[g, j]
                x = ldexp(1.0, -(shift[g, j] + E[g, j])) / lo
                a = hi1[g, j] / lo
            bx = x if x > bx or x != x else bx
            ba = a if a > ba or a != a else ba
        xm[g], am[g] = bx, ba


def normwise_maxima(E, zero, lo2, hi1, shift):
    """Fast mode: per slice ``max x`` and ``max alpha`` of :meth:`ozaki.core.certify.Normwise.terms`.

    ``x = 2**-(shift + E) / lo2`` and ``alpha = hi1 / lo2`` on nonzero lines, 0 on
    zero lines (all (b, lines)); the same IEEE operations as the numpy form
    (``ldexp`` of 1 is exact or, out of range, the same 0 or inf), and maxima do
    not depend on the order. One pass, no temporaries; NaN propagates as in
    ``np.max``.
    """
    b = E.shape[0]
    xm = np.zeros(b)
    am = np.zeros(b)
    run(_normwise_slices, b, E, zero, lo2, hi1, shift, xm, am)
    return xm, am

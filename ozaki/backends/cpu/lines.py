"""Step 1's passes over the operands: line maxima, norm sums and floors, compiled.

The exact per-line data of an operand (:class:`ozaki.core.decisions.Lines`, the
fast mode's :class:`ozaki.core.decisions.Norms`, the accurate mode's floors) come
from these passes over its IEEE bit patterns, under the rules of
:mod:`ozaki.backends.cpu.kernels` (integer operations, one thread per output, no fastmath).
Lines are the rows of ``A`` (``axis`` 0) or the columns of ``B`` (``axis`` 1);
columns are reduced in chunks (:func:`ozaki.backends.cpu.kernels.column_chunks`), each by one
task, so the results (integer maxima, counts and sums) do not depend on the
thread count (:mod:`ozaki.backends.cpu.parallel`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .kernels import CACHE, HIDDEN_BIT, MANTISSA_MASK, column_chunk, column_chunks, line_exponent
from .parallel import run

__all__ = ["absmax_bits", "line_floors", "line_norms", "norm_sums", "quantize_down"]


@nb.njit(inline="always")
def _row_stats(row):
    """``(maxbits, nonfinite count, nonzeros)`` of one row of bits (see :func:`absmax_bits`)."""
    bb = 0
    f = 0
    c = 0
    for j in range(row.shape[0]):
        a = row[j] & 0x7FFFFFFFFFFFFFFF
        fin = a < 0x7FF0000000000000
        f += not fin
        c += fin & (a > 0)
        v = a if fin else 0
        bb = v if v > bb else bb
    return bb, f, c


@nb.njit(inline="always")
def _chunk_stats(Xg, j0, j1, bg, fg, cg):
    """:func:`_row_stats` of the columns ``j0:j1`` of the slice ``Xg``, into ``bg``, ``fg``, ``cg``."""
    for i in range(Xg.shape[0]):
        row = Xg[i]
        for j in range(np.uint64(j0), np.uint64(j1)):
            a = row[j] & 0x7FFFFFFFFFFFFFFF
            fin = a < 0x7FF0000000000000
            fg[j] |= not fin
            cg[j] += fin & (a > 0)
            v = a if fin else 0
            bg[j] = v if v > bg[j] else bg[j]


def absmax_bits(X, axis):
    """Largest ``|x|`` bits over finite entries along rows (axis 0) or columns (1).

    ``X`` is a stack (b, r, c) of bit patterns; the lines are its rows (axis 0,
    output shape (b, r)) or its columns (axis 1, output (b, c)). Returns
    ``(maxbits, nonfinite, nonzeros)``: the int64 bit pattern of the largest
    finite magnitude (0 if none), a flag for any Inf or NaN, and the number of
    finite nonzero entries: integer maxima and counts, exact in any order
    (the first pass of :func:`line_norms`, alone).
    """
    return line_norms(X, axis, 0)[:3]


@nb.njit(inline="always")
def _quantized(x, E):
    """``floor(|x| 2**E)`` as an int64 for the bits ``x`` of a double (non-finite -> 0).

    With ``|x| = mant 2**(ex - 1075)`` (hidden bit set, ``ex`` the biased exponent;
    ``ex = 1`` for subnormals) the floor of ``mant 2**d`` is ``mant << d`` (``d >= 0``)
    or ``mant >> -d``, exact; counts capped at 63 give the floor 0 for ``d <= -53``
    (``mant < 2**53``); the caller keeps results below ``2**53``. Selects, not
    branches: the loops vectorise.
    """
    a = x & 0x7FFFFFFFFFFFFFFF
    ex = a >> 52
    normal = ex > 0
    mant = (a & MANTISSA_MASK) | (HIDDEN_BIT if normal else 0)
    d = (ex if normal else 1) - 1075 + E
    left = mant << min(max(d, 0), 63)
    right = mant >> min(max(-d, 0), 63)
    v = left if d >= 0 else right
    return v if ex < 0x7FF else 0


@nb.njit(nogil=True, cache=CACHE)
def _quantize_rows(t0, t1, X, srow, scol, out, sums):
    """Rows ``t0:t1`` (flattened over the stack) of :func:`quantize_down`."""
    b, m, k = out.shape
    bx = X.shape[0]
    for gi in range(t0, t1):
        g = gi // m
        i = gi - g * m
        gx = min(g, bx - 1)
        si, row, o, cg = srow[g, i], X[gx, i], out[g, i], scol[g]
        acc = 0  # an integer sum: it vectorises, and is exact
        for j in range(k):
            v = _quantized(row[j], si + cg[j])
            o[j] = np.int32(v)
            acc += v
        if sums.shape[0] > 0:
            sums[g, i] = acc


@nb.njit(nogil=True, cache=CACHE)
def _quantize_columns(t0, t1, X, srow, scol, out, sums, nchunks, width):
    """Column chunks ``t0:t1`` of :func:`quantize_down` with column sums."""
    b, m, k = out.shape
    bx = X.shape[0]
    for gc in range(t0, t1):
        g, j0, j1 = column_chunk(gc, nchunks, k, width)
        gx = min(g, bx - 1)
        sg, cg = sums[g], scol[g]
        for i in range(m):
            si, row, o = srow[g, i], X[gx, i], out[g, i]
            for j in range(np.uint64(j0), np.uint64(j1)):
                v = _quantized(row[j], si + cg[j])
                o[j] = np.int32(v)
                sg[j] += v


def quantize_down(X, srow, scol, out, sums, axis):
    """``out[g, i, j] = floor(|x_gij| * 2**(srow[g, i] + scol[g, j]))`` exactly (non-finite -> 0).

    The caller picks the shifts so that every result is below ``2**20``: it
    converts exactly through int32, which vectorises (int64 conversions do not
    on AVX2). ``X`` (bx, r, c) with ``bx`` 1 (shared) or ``b``, as for
    :func:`ozaki.backends.cpu.residues.gather_residues`. ``sums`` (b, lines) of int64, when it
    has entries, receives the sums of the floors along the lines (rows for
    ``axis`` 0, columns for 1) in the same pass: exact integers, in any order
    (the column sums are formed by chunks of columns, one task a chunk, as in
    :func:`absmax_bits`).
    """
    b, m, k = out.shape
    if sums.shape[0] > 0 and axis == 1:
        width, nchunks = column_chunks(k)
        run(_quantize_columns, b * nchunks, X, srow, scol, out, sums, nchunks, width)
    else:
        run(_quantize_rows, b * m, X, srow, scol, out, sums)


@nb.njit(inline="always")
def _row_norms(row, E):
    """``(sum F**2, sum F)`` of ``F = floor(|x| 2**E)`` along one row of bits."""
    a2 = 0
    a1 = 0
    for j in range(row.shape[0]):
        f = _quantized(row[j], E)
        a2 += f * f
        a1 += f
    return a2, a1


@nb.njit(inline="always")
def _chunk_norms(Xg, j0, j1, E, a2, a1):
    """:func:`_row_norms` of the columns ``j0:j1`` of ``Xg``, shifts ``E`` (the chunk's),
    into ``a2``, ``a1`` (the chunk's)."""
    for i in range(Xg.shape[0]):
        row = Xg[i, j0:j1]
        for j in range(j1 - j0):
            f = _quantized(row[j], E[j])
            a2[j] += f * f
            a1[j] += f


@nb.njit(nogil=True, cache=CACHE)
def _sums_rows(t0, t1, X, shift, s2, s1):
    """Rows ``t0:t1`` of :func:`norm_sums` along rows."""
    m = X.shape[1]
    for gi in range(t0, t1):
        g = gi // m
        i = gi - g * m
        s2[g, i], s1[g, i] = _row_norms(X[g, i], shift[g, i])


@nb.njit(nogil=True, cache=CACHE)
def _sums_columns(t0, t1, X, shift, s2, s1, nchunks, width):
    """Column chunks ``t0:t1`` of :func:`norm_sums` along columns."""
    k = X.shape[2]
    for gc in range(t0, t1):
        g, j0, j1 = column_chunk(gc, nchunks, k, width)
        _chunk_norms(X[g], j0, j1, shift[g, j0:j1], s2[g, j0:j1], s1[g, j0:j1])


def norm_sums(X, shift, axis):
    """Exact integer sums of floors ``F = floor(|x| 2**shift)`` along rows (0) or columns (1).

    ``shift`` holds one exponent per line, shape (b, lines), chosen by the
    caller so that every ``F < 2**h`` with ``lines' length * 2**(2h) < 2**62``.
    Returns ``(S2, S1)`` as int64 (b, lines): ``S2 = sum F**2`` and ``S1 = sum F``,
    exact integers (no rounding, so any order and any partition of the line
    gives the same sums). Non-finite entries count 0 (:func:`_quantized`).
    """
    b, m, k = X.shape
    s2 = np.zeros((b, m if axis == 0 else k), np.int64)
    s1 = np.zeros_like(s2)
    if axis == 0:
        run(_sums_rows, b * m, X, shift, s2, s1)
    else:
        width, nchunks = column_chunks(k)
        run(_sums_columns, b * nchunks, X, shift, s2, s1, nchunks, width)
    return s2, s1


@nb.njit(inline="always")
def _norm_shift(maxbits, h):
    """``h - E`` of a line (0 on an all-zero line), ``E`` of :func:`ozaki.core.scaling.exponents`."""
    return 0 if maxbits == 0 else h - line_exponent(maxbits)


def _stat_arrays(b, n):
    """Zeroed ``(maxbits, nonfinite, nonzeros)`` outputs, (b, n) each."""
    return np.zeros((b, n), np.int64), np.zeros((b, n), np.bool_), np.zeros((b, n), np.int64)


@nb.njit(nogil=True, cache=CACHE)
def _norms_rows(t0, t1, X, h, best, bad, nnz, s2, s1):
    """Rows ``t0:t1`` of :func:`line_norms` along rows."""
    m = X.shape[1]
    for gi in range(t0, t1):
        g = gi // m
        i = gi - g * m
        row = X[g, i]
        bb, f, nnz[g, i] = _row_stats(row)
        best[g, i], bad[g, i] = bb, f > 0
        if h:
            s2[g, i], s1[g, i] = _row_norms(row, _norm_shift(bb, h))


@nb.njit(nogil=True, cache=CACHE)
def _norms_columns(t0, t1, X, h, best, bad, nnz, s2, s1, nchunks, width):
    """Column chunks ``t0:t1`` of :func:`line_norms` along columns."""
    k = X.shape[2]
    for gc in range(t0, t1):
        g, j0, j1 = column_chunk(gc, nchunks, k, width)
        _chunk_stats(X[g], j0, j1, best[g], bad[g], nnz[g])
        if h:
            E = np.empty(j1 - j0, np.int64)
            for j in range(j1 - j0):
                E[j] = _norm_shift(best[g, j0 + j], h)
            _chunk_norms(X[g], j0, j1, E, s2[g, j0:j1], s1[g, j0:j1])


def line_norms(X, axis, h):
    """:func:`absmax_bits` and, for ``h > 0``, :func:`norm_sums` at ``h`` in one read of each line.

    The sums floor each line at ``shift = h - E`` from the maximum just found
    (0 on an all-zero line), the shifts :func:`ozaki.core.pipeline` gives
    :func:`norm_sums`: the same exact integers as the two passes, the second
    read from cache (a row, or a chunk of columns). Returns
    ``(maxbits, nonfinite, nonzeros, S2, S1)``, each (b, lines) (``S2``, ``S1``
    empty for ``h = 0``). Branch-free (selects) over unsigned column indices:
    the loops vectorise.
    """
    b, m, k = X.shape
    n_out = m if axis == 0 else k
    best, bad, nnz = _stat_arrays(b, n_out)
    s2 = np.zeros((b if h else 0, n_out if h else 0), np.int64)
    s1 = np.zeros_like(s2)
    if axis == 0:
        run(_norms_rows, b * m, X, h, best, bad, nnz, s2, s1)
    else:
        width, nchunks = column_chunks(k)
        run(_norms_columns, b * nchunks, X, h, best, bad, nnz, s2, s1, nchunks, width)
    return best, bad, nnz, s2, s1


@nb.njit(inline="always")
def _floor_shift(maxbits, r):
    """The shift ``e = r - E`` of a line, 0 on an all-zero line (``accurate_quantizers``)."""
    return 0 if maxbits == 0 else r - line_exponent(maxbits)


@nb.njit(nogil=True, cache=CACHE)
def _floors_rows(t0, t1, X, r, out, sums, best, bad, nnz):
    """Rows ``t0:t1`` of :func:`line_floors` along rows."""
    m, k = X.shape[1], X.shape[2]
    for gi in range(t0, t1):
        g = gi // m
        i = gi - g * m
        row, o = X[g, i], out[g, i]
        bb, f, nnz[g, i] = _row_stats(row)
        best[g, i], bad[g, i] = bb, f > 0
        e = _floor_shift(bb, r)
        acc = 0
        for j in range(k):
            v = _quantized(row[j], e)
            o[j] = np.int32(v)
            acc += v
        sums[g, i] = acc


@nb.njit(nogil=True, cache=CACHE)
def _floors_columns(t0, t1, X, r, out, sums, best, bad, nnz, nchunks, width):
    """Column chunks ``t0:t1`` of :func:`line_floors` along columns."""
    m, k = X.shape[1], X.shape[2]
    for gc in range(t0, t1):
        g, j0, j1 = column_chunk(gc, nchunks, k, width)
        _chunk_stats(X[g], j0, j1, best[g], bad[g], nnz[g])
        E = np.empty(j1 - j0, np.int64)
        for j in range(j1 - j0):
            E[j] = _floor_shift(best[g, j0 + j], r)
        sg = sums[g, j0:j1]
        for i in range(m):
            row, o = X[g, i, j0:j1], out[g, i, j0:j1]
            for j in range(np.uint64(0), np.uint64(j1 - j0)):
                v = _quantized(row[j], E[j])
                o[j] = np.int32(v)
                sg[j] += v


def line_floors(X, axis, r, out, sums):
    """:func:`absmax_bits` and the accurate mode's floors at ``r`` in one read of each line.

    Each line is floored at ``e = r - E`` from the maximum just found, the
    second read from cache (a row, or a chunk of columns): ``out`` (b, r, c)
    receives ``floor(|x| 2**e)`` (below ``2**r``, exact through int32) and
    ``sums`` (b, lines) their int64 sums, the integers :func:`quantize_down`
    forms with the shifts :func:`ozaki.core.scaling.accurate_quantizers` gives.
    Returns ``(maxbits, nonfinite, nonzeros)``, each (b, lines).
    """
    b, m, k = X.shape
    best, bad, nnz = _stat_arrays(b, m if axis == 0 else k)
    if axis == 0:
        run(_floors_rows, b * m, X, r, out, sums, best, bad, nnz)
    else:
        width, nchunks = column_chunks(k)
        run(_floors_columns, b * nchunks, X, r, out, sums, best, bad, nnz, nchunks, width)
    return best, bad, nnz

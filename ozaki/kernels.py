"""Fused O(n^2) passes of the scheme, compiled with numba.

Every kernel is exact or rounds once, documented per function:

* operands are read as their IEEE bit patterns (int64 views), so scaling by a
  power of two, truncation and residues are integer operations: no libm call,
  no ``frexp`` of a rounded value, and subnormal inputs are handled exactly;
* parallel loops run over rows (``prange``) and each output element is produced
  by one thread in a fixed order: results do not depend on the thread count;
* no ``fastmath``: numba does not contract ``a*b + c`` into an FMA without it, so
  the FMA policy is "none anywhere" (DESIGN.md, step 4);
* rounding to an integer uses the ``1.5 * 2**52`` constant, exact for
  ``|x| <= 2**51`` and identical on every IEEE machine.

The operand kernels work on C-ordered 2-D bit arrays ``X`` whose entries are
scaled by ``2**(srow[i] + scol[j])``: the row shifts of ``A`` are passed as
``srow`` (``scol`` zero) and the column shifts of ``B`` as ``scol``.
"""

from __future__ import annotations

import os
import threading

import numba as nb
import numpy as np

from .scaling import line_exponent

_CACHE = True

#: OpenMP wait policy that numba's worker threads start with, unless the process
#: sets ``OMP_WAIT_POLICY`` itself. Spinning workers take the cores from the BLAS
#: threads that run next (7x vs 10x numpy measured at n = 1024 on 2 cores).
WAIT_POLICY = "PASSIVE"


@nb.njit(parallel=True, cache=_CACHE)
def _touch(x):  # pragma: no cover - trivially compiled
    for i in nb.prange(x.shape[0]):
        x[i] = i


class _KernelLock:
    """The lock around every compiled call; the first entry starts numba's threads.

    numba's default threading layer may not be entered from two Python threads at
    once: callers hold this (re-entrant) lock around kernel calls, BLAS runs
    outside it. The OpenMP runtime reads ``OMP_WAIT_POLICY`` once, when numba
    loads it at its first parallel launch; that launch happens here, with
    :data:`WAIT_POLICY` put into the environment for the moment of the launch
    only (a value the process set wins). ``import ozaki`` and later calls leave
    ``os.environ`` as they found it.
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._started = False

    def _start(self):
        self._started = True
        set_here = "OMP_WAIT_POLICY" not in os.environ and bool(WAIT_POLICY)
        if set_here:
            os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
        try:
            _touch(np.empty(2))
        finally:
            if set_here:
                os.environ.pop("OMP_WAIT_POLICY", None)

    def __enter__(self):
        self._lock.acquire()
        if not self._started:
            try:
                self._start()
            except BaseException:
                self._lock.release()
                raise
        return self

    def __exit__(self, *exc):
        self._lock.release()
        return False


LOCK = _KernelLock()
_MAGIC = 6755399441055744.0  # 1.5 * 2**52
_TWO26 = 67108864.0
_TWO_M26 = 1.0 / 67108864.0
_MANT = 0xFFFFFFFFFFFFF
_HIDDEN = 1 << 52

#: ``POW2[e + 1022] == 2.0**e`` for every normal exponent ``e`` in [-1022, 1023].
POW2 = np.array([2.0 ** e for e in range(-1022, 1024)])


@nb.njit(inline="always")
def _rint(x):
    """Round to nearest (ties to even); exact for ``|x| <= 2**51``."""
    return (x + _MAGIC) - _MAGIC


@nb.njit(inline="always")
def smod(y, p, pinv, c26):
    """Symmetric residue of the integer-valued float ``y`` (``|y| <= 2**53``).

    Returns ``r == y (mod p)`` with ``-floor(p/2) <= r <= ceil(p/2) - 1``.
    Exactness: ``y = yh 2**26 + yl`` exactly with ``|yh| <= 2**27``,
    ``|yl| <= 2**25``; each quotient times ``p`` stays below ``2**45``
    (``p < 2**22``), so every product and difference is an exact integer, and
    the rounded quotient is off by at most one, fixed by one correction.
    ``c26`` is ``2**26 mod p``.
    """
    yh = _rint(y * _TWO_M26)
    yl = y - yh * _TWO26
    t = yh - p * _rint(yh * pinv)
    z = t * c26 + yl
    r = z - p * _rint(z * pinv)
    hi = np.floor((p - 1.0) * 0.5)
    if r > hi:
        r -= p
    elif r < hi - p + 1.0:
        r += p
    return r


@nb.njit(inline="always")
def _unpack(x):
    """Bits ``x`` of a finite double -> (mantissa, exponent): ``|v| = mant * 2**ex``."""
    ex = (x >> 52) & 0x7FF
    mant = x & _MANT
    if ex > 0:
        mant |= _HIDDEN
        return mant, ex - 1075
    return mant, -1074


#: Tasks per chunk of the passes that run in row tiles (:func:`row_tiles`): a
#: chunk, on one thread, allocates its scratch once.
CHUNK_TASKS = 32


@nb.njit(inline="always")
def row_tiles(rows, w, size):
    """``(tile, tiles, per, chunks)``: tasks of about ``size`` entries over ``rows`` rows of ``w``.

    A task takes a tile of at most ``size`` columns of ``per = size // tile``
    consecutive rows (about ``size`` entries however narrow the rows); task
    ``task`` covers rows from ``(task // tiles) per`` and columns from
    ``(task % tiles) tile``. Tasks go in ``chunks`` of :data:`CHUNK_TASKS`.
    """
    tile = max(1, min(w, size))
    tiles = (w + tile - 1) // tile
    per = size // tile
    tasks = ((rows + per - 1) // per) * tiles
    return tile, tiles, per, (tasks + CHUNK_TASKS - 1) // CHUNK_TASKS


#: Columns per task of the passes that reduce along columns, at least (each
#: column's result is formed by one thread, in row order: thread-count independent).
COLUMN_CHUNK = 256


@nb.njit(inline="always")
def column_chunks(n):
    """``(width, count)`` of the column chunks of ``n`` columns: at least :data:`COLUMN_CHUNK`,
    wider (up to 16x) for long rows, whose narrow chunks read short runs of every row
    (1.5x slower at 2**20 columns). The results do not depend on the chunks."""
    width = min(16 * COLUMN_CHUNK, max(COLUMN_CHUNK, n // 64))
    return width, (n + width - 1) // width


@nb.njit(inline="always")
def column_chunk(task, nchunks, n, width):
    """Slice ``g`` and column range ``[j0, j1)`` of task ``task`` over ``nchunks`` chunks."""
    g = task // nchunks
    j0 = (task - g * nchunks) * width
    return g, j0, min(n, j0 + width)


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
def smod_short(y, p, pinv):
    """Symmetric residue of the integer-valued float ``y`` with ``|y| <= 2**52``.

    ``q = rint(y / p)`` is off by at most one; ``|q p| < 2**53`` so ``y - q p``
    is exact, and one correction brings it into range.
    """
    r = y - p * _rint(y * pinv)
    hi = np.floor((p - 1.0) * 0.5)
    if r > hi:
        r -= p
    elif r < hi - p + 1.0:
        r += p
    return r


@nb.njit(inline="always")
def smod_product(y, p, pinv, c26, short):
    """:func:`smod` of an exact product ``|y| <= 2**53``, or with ``short`` (the
    caller's bound ``|y| <= 2**52``) the one-step :func:`smod_short`: the same residue."""
    if short:
        return smod_short(y, p, pinv)
    return smod(y, p, pinv, c26)


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
    mant = (a & _MANT) | (_HIDDEN if normal else 0)
    d = (ex if normal else 1) - 1075 + E
    left = mant << min(max(d, 0), 63)
    right = mant >> min(max(-d, 0), 63)
    v = left if d >= 0 else right
    return v if ex < 0x7FF else 0


@nb.njit(parallel=True, cache=_CACHE)
def quantize_down(X, srow, scol, out, sums, axis):
    """``out[g, i, j] = floor(|x_gij| * 2**(srow[g, i] + scol[g, j]))`` exactly (non-finite -> 0).

    The caller picks the shifts so that every result is below ``2**20``: it
    converts exactly through int32, which vectorises (int64 conversions do not
    on AVX2). ``X`` (bx, r, c) with ``bx`` 1 (shared) or ``b``, as for
    :func:`ozaki.residues.gather_residues`. ``sums`` (b, lines) of int64, when it
    has entries, receives the sums of the floors along the lines (rows for
    ``axis`` 0, columns for 1) in the same pass: exact integers, in any order
    (the column sums are formed by chunks of columns, one thread a chunk, as in
    :func:`absmax_bits`).
    """
    b, m, k = out.shape
    bx = X.shape[0]
    if sums.shape[0] > 0 and axis == 1:
        width, nchunks = column_chunks(k)
        for gc in nb.prange(b * nchunks):
            g, j0, j1 = column_chunk(gc, nchunks, k, width)
            gx = min(g, bx - 1)
            sg, cg = sums[g], scol[g]
            for i in range(m):
                si, row, o = srow[g, i], X[gx, i], out[g, i]
                for j in range(np.uint64(j0), np.uint64(j1)):
                    v = _quantized(row[j], si + cg[j])
                    o[j] = np.int32(v)
                    sg[j] += v
        return
    for gi in nb.prange(b * m):
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


@nb.njit(parallel=True, cache=_CACHE)
def norm_sums(X, shift, axis):
    """Exact integer sums of floors ``F = floor(|x| 2**shift)`` along rows (0) or columns (1).

    ``shift`` holds one exponent per line, shape (b, lines), chosen by the
    caller so that every ``F < 2**h`` with ``lines' length * 2**(2h) < 2**62``.
    Returns ``(S2, S1)`` as int64 (b, lines): ``S2 = sum F**2`` and ``S1 = sum F``,
    exact integers (no rounding, so any order and any partition of the line
    gives the same sums). Non-finite entries count 0 (:func:`_quantized`).
    """
    b, m, k = X.shape
    n_out = m if axis == 0 else k
    s2 = np.zeros((b, n_out), np.int64)
    s1 = np.zeros((b, n_out), np.int64)
    if axis == 0:
        for gi in nb.prange(b * m):
            g = gi // m
            i = gi - g * m
            s2[g, i], s1[g, i] = _row_norms(X[g, i], shift[g, i])
    else:
        width, nchunks = column_chunks(k)
        for gc in nb.prange(b * nchunks):
            g, j0, j1 = column_chunk(gc, nchunks, k, width)
            _chunk_norms(X[g], j0, j1, shift[g, j0:j1], s2[g, j0:j1], s1[g, j0:j1])
    return s2, s1


@nb.njit(inline="always")
def _norm_shift(maxbits, h):
    """``h - E`` of a line (0 on an all-zero line), ``E`` of :func:`ozaki.scaling.exponents`."""
    return 0 if maxbits == 0 else h - line_exponent(maxbits)


@nb.njit(parallel=True, cache=_CACHE)
def line_norms(X, axis, h):
    """:func:`absmax_bits` and, for ``h > 0``, :func:`norm_sums` at ``h`` in one read of each line.

    The sums floor each line at ``shift = h - E`` from the maximum just found
    (0 on an all-zero line), the shifts :func:`ozaki.pipeline` gives
    :func:`norm_sums`: the same exact integers as the two passes, the second
    read from cache (a row, or a chunk of columns). Returns
    ``(maxbits, nonfinite, nonzeros, S2, S1)``, each (b, lines) (``S2``, ``S1``
    empty for ``h = 0``). Branch-free (selects) over unsigned column indices:
    the loops vectorise.
    """
    b, m, k = X.shape
    n_out = m if axis == 0 else k
    best = np.zeros((b, n_out), np.int64)
    bad = np.zeros((b, n_out), np.bool_)
    nnz = np.zeros((b, n_out), np.int64)
    s2 = np.zeros((b if h else 0, n_out if h else 0), np.int64)
    s1 = np.zeros_like(s2)
    if axis == 0:
        for gi in nb.prange(b * m):
            g = gi // m
            i = gi - g * m
            row = X[g, i]
            bb, f, nnz[g, i] = _row_stats(row)
            best[g, i], bad[g, i] = bb, f > 0
            if h:
                s2[g, i], s1[g, i] = _row_norms(row, _norm_shift(bb, h))
    else:
        width, nchunks = column_chunks(k)
        for gc in nb.prange(b * nchunks):
            g, j0, j1 = column_chunk(gc, nchunks, k, width)
            _chunk_stats(X[g], j0, j1, best[g], bad[g], nnz[g])
            if h:
                E = np.empty(j1 - j0, np.int64)
                for j in range(j1 - j0):
                    E[j] = _norm_shift(best[g, j0 + j], h)
                _chunk_norms(X[g], j0, j1, E, s2[g, j0:j1], s1[g, j0:j1])
    return best, bad, nnz, s2, s1

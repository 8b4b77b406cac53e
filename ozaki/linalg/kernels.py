"""The O(n^2 nb) work: unblocked kernels compiled with numba, in a fixed order of IEEE operations.

Every kernel here is a loop nest of scalar IEEE operations (``/``, ``*``, ``-``,
``sqrt``, comparisons): each result entry is produced by a fixed sequence of
single roundings on given operands, never a reduction whose order could depend on
SIMD width or threads, and never a BLAS or LAPACK call. A rank-1 update
``A -= l u^T`` rounds ``l_i u_j``, then the difference (two roundings: compiled
without ``fastmath``, so numba never contracts ``a - l*u`` into a fused
multiply-add), each entry receiving its updates in the order of the elimination
steps. So the bits depend only on the operands; they are the bits of the
element-wise numpy formulation of the same steps (``tests/test_linalg.py`` checks
both against each other).

The loops are ordered for the caches (blocks of columns, several steps or rows
per pass); that changes which entry is computed when, never the operations an
entry receives nor their order: each kernel's docstring argues it. The kernels
are serial numba functions (no ``parallel=True``; ``nogil``); the triangular
solves cut ``B`` into blocks of columns, independent of each other, run on
ozaki's pass threads (:func:`ozaki.backends.cpu.parallel.run`), so their bits do
not depend on the thread count. They use numpy's error model: a division by zero
gives an IEEE infinity or NaN, as numpy does, and never raises.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..backends.cpu import parallel

__all__ = ["lu_panel", "check_panel", "cholesky_block", "unit_lower_solve", "lower_solve",
           "upper_solve", "first_zero"]

_jit = nb.njit(cache=True, nogil=True, error_model="numpy")
_inline = nb.njit(inline="always", nogil=True, error_model="numpy")

_SUB = 16    # columns per group of lu_panel (left-looking inside, deferred updates between)
_ROWS = 256  # rows per tile of lu_panel's deferred updates (the tile's columns stay in L1/L2)
_COLS = 64   # columns of B per block of the triangular solves (n x 64 doubles stay in L2)
_PARALLEL_WORK = 1 << 22  # n^2 q below which a solve runs on the calling thread only (2^21
#                           updates, ~0.2 ms: more than handing blocks to the pool costs)
_ABS = 0x7FFFFFFFFFFFFFFF  # the bits of a double but its sign
_INF = 0x7FF0000000000000  # the bits of +inf


@_inline
def _axpy(x, a, y):
    """``x[c] <- x[c] - a * y[c]`` (1-D, the length of ``x``): two roundings per entry."""
    for c in range(x.shape[0]):
        x[c] = x[c] - a * y[c]


@_jit
def _steps(P, r0, r1, c0, c1, t0, t1):
    # Rows r0..r1-1 (r0 >= t1) of columns c0..c1-1 of P get the updates of the steps
    # t0..t1-1, in order: P[i, c] <- P[i, c] - P[i, t] * P[t, c]. Four steps per pass,
    # four columns at a time: x - l0 u0 - l1 u1 - ... is evaluated left to right (the
    # same roundings, in the same order, as four passes) with one load and store of x.
    n = r1 - r0
    c = c0
    while c < c1:
        g = 4 if c + 4 <= c1 else 1
        t = t0
        while t + 4 <= t1:
            l0 = P[r0:r1, t]
            l1 = P[r0:r1, t + 1]
            l2 = P[r0:r1, t + 2]
            l3 = P[r0:r1, t + 3]
            if g == 4:
                x0, x1, x2, x3 = P[r0:r1, c], P[r0:r1, c + 1], P[r0:r1, c + 2], P[r0:r1, c + 3]
                a0, a1, a2, a3 = P[t, c], P[t + 1, c], P[t + 2, c], P[t + 3, c]
                b0, b1, b2, b3 = P[t, c + 1], P[t + 1, c + 1], P[t + 2, c + 1], P[t + 3, c + 1]
                d0, d1, d2, d3 = P[t, c + 2], P[t + 1, c + 2], P[t + 2, c + 2], P[t + 3, c + 2]
                e0, e1, e2, e3 = P[t, c + 3], P[t + 1, c + 3], P[t + 2, c + 3], P[t + 3, c + 3]
                for i in range(n):
                    m0, m1, m2, m3 = l0[i], l1[i], l2[i], l3[i]
                    x0[i] = (((x0[i] - m0 * a0) - m1 * a1) - m2 * a2) - m3 * a3
                    x1[i] = (((x1[i] - m0 * b0) - m1 * b1) - m2 * b2) - m3 * b3
                    x2[i] = (((x2[i] - m0 * d0) - m1 * d1) - m2 * d2) - m3 * d3
                    x3[i] = (((x3[i] - m0 * e0) - m1 * e1) - m2 * e2) - m3 * e3
            else:
                x0 = P[r0:r1, c]
                a0, a1, a2, a3 = P[t, c], P[t + 1, c], P[t + 2, c], P[t + 3, c]
                for i in range(n):
                    x0[i] = (((x0[i] - l0[i] * a0) - l1[i] * a1) - l2[i] * a2) - l3[i] * a3
            t += 4
        for s in range(t, t1):
            for cc in range(c, c + g):
                _axpy(P[r0:r1, cc], P[s, cc], P[r0:r1, s])
        c += g


@_inline
def _pivot(x):
    # The first index of the largest |x[i]|, or of the first NaN if there is one. The
    # magnitude bits (sign cleared) of doubles that are not NaN compare as integers as
    # the magnitudes do (IEEE 754 orders them by exponent, then significand; +-0 share
    # 0); a NaN's exceed +inf's. The maximum is an integer reduction (any order gives
    # the same maximum), then the first index holding it.
    b = x.view(np.int64)
    top = 0
    for i in range(b.shape[0]):
        v = b[i] & _ABS
        top = v if v > top else top
    nan = top > _INF
    for i in range(b.shape[0]):
        v = b[i] & _ABS
        if v == top or (nan and v > _INF):
            return i
    return 0


@_inline
def column_major(h, w):
    """An uninitialised (h, w) float64 panel in column-major order (a view of a taller
    buffer): each column an odd number of 64-byte cache lines, so that panels of
    h = 4096, 2048, ... rows get no power-of-two stride."""
    ld = (h + 7) // 8 * 8
    ld += 8 * (1 - ld // 8 % 2)
    return np.empty((w, ld)).T[:h]


@_jit
def _lu_panel(W, k, w, piv):
    m, n = W.shape
    h = m - k
    P = column_major(h, w)  # rows h.. are padding, never read
    for i0 in range(0, h, 8):  # by strips of 8 rows (a transposition)
        for c in range(w):
            for i in range(i0, min(i0 + 8, h)):
                P[i, c] = W[k + i, k + c]
    zero = -1
    for j0 in range(0, w, _SUB):
        e = min(j0 + _SUB, w)
        # the steps 0..j0-1 on columns j0..e-1: rows 1..j0-1 (row i gets the steps t < i),
        # four steps at a time, first inside the four, then below them ...
        for t0 in range(0, j0, 4):
            t1 = min(t0 + 4, j0)
            for c in range(j0, e):
                for t in range(t0, t1 - 1):
                    _axpy(P[t + 1:t1, c], P[t, c], P[t + 1:t1, t])
            _steps(P, t1, j0, j0, e, t0, t1)
        # ... then rows j0.. (all of the steps), by tiles of rows
        for i0 in range(j0, h, _ROWS):
            _steps(P, i0, min(i0 + _ROWS, h), j0, e, 0, j0)
        for j in range(j0, e):
            # column j gets the steps j0..j-1: rows j0+1..j-1, then rows j..
            for t in range(j0, j - 1):
                _axpy(P[t + 1:j, j], P[t, j], P[t + 1:j, t])
            _steps(P, j, h, j, j + 1, j0, j)
            p = j + _pivot(P[j:h, j])
            piv[k + j] = k + p
            if P[p, j] != 0:
                if p != j:
                    for c in range(w):
                        t = P[j, c]
                        P[j, c] = P[p, c]
                        P[p, c] = t
                d = P[j, j]
                for i in range(j + 1, h):
                    P[i, j] = P[i, j] / d
            elif zero < 0:
                zero = k + j
    for i0 in range(0, h, 32):  # by 32 x 32 tiles (a transposition)
        for c0 in range(0, w, 32):
            for i in range(i0, min(i0 + 32, h)):
                for c in range(c0, min(c0 + 32, w)):
                    W[k + i, k + c] = P[i, c]
    for j in range(k, k + w):
        p = piv[j]
        if p != j:
            for c in range(k):
                t = W[j, c]
                W[j, c] = W[p, c]
                W[p, c] = t
            for c in range(k + w, n):
                t = W[j, c]
                W[j, c] = W[p, c]
                W[p, c] = t
    return zero


def check_panel(W: np.ndarray, k: int, w: int, piv: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``W[k:, k:k+w]`` is a panel :func:`lu_panel` can factor."""
    if W.ndim != 2:
        raise ValueError(f"W must be a 2-D array, got shape {W.shape}")
    if not (0 <= k and 0 <= w and k + w <= min(W.shape)):
        raise ValueError(f"the panel k={k}, w={w} must satisfy 0 <= k, 0 <= w and k + w <= "
                         f"min(W.shape) = {min(W.shape)}")
    if piv.ndim != 1 or piv.shape[0] < k + w:
        raise ValueError(f"piv must be 1-D with at least k + w = {k + w} entries, "
                         f"got shape {piv.shape}")


def lu_panel(W: np.ndarray, k: int, w: int, piv: np.ndarray) -> int:
    """Factor columns ``k:k+w`` of ``W`` (rows ``k:``) in place, LAPACK's partial pivoting.

    For each column ``j``: the pivot is the first row of largest magnitude in
    ``W[j:, j]`` (a NaN, the first one, wins, as numpy's ``argmax``); ``piv[j]``
    records its global index; whole rows of ``W`` are interchanged (the columns
    left and right of the panel too, as ``dlaswp`` does); the column below the
    pivot is divided by it and the rest of the panel gets the rank-1 update
    ``W[i, c] <- W[i, c] - W[i, j] * W[j, c]``. An exactly zero pivot (the whole
    column is zero) is skipped, as LAPACK skips it. ``ValueError`` for a panel out of
    ``W`` (:func:`check_panel`).

    Parameters
    ----------
    W : ndarray, float64, shape (m, n)
        The matrix, steps ``0..k-1`` done; overwritten: columns ``k:k+w`` of rows ``k:``
        by the multipliers and ``U``'s rows, and rows interchanged.
    k, w : int
        The panel's first column and width, ``0 <= k``, ``0 <= w``, ``k + w <= min(m, n)``
        (so the panel is at least as tall as wide).
    piv : ndarray, integer, shape (>= k + w,)
        Receives the pivots' row indices in ``piv[k:k+w]``.

    Returns
    -------
    int
        The 0-based column of the first exactly zero pivot, or -1.

    Work order (not arithmetic). The panel is copied (exactly) into a column-major
    buffer; its columns are treated in groups of 16: a group first gets the
    updates of all the earlier steps (by tiles of rows, four steps and four columns
    per pass), then its columns are factored one by one, each first getting the
    updates of the earlier steps of its group. Row interchanges are applied to the
    whole panel when their pivot is chosen; the rows of ``W`` outside the panel are
    interchanged afterwards, in order (a permutation: the same result).

    Why the bits are those of the step-by-step formulation: follow a row of the
    matrix (its values move with it in an interchange, its multipliers too). At
    step ``t`` it gets ``x <- fl(x - fl(l_t u_t))`` in each column ``c > t`` if it is
    not yet a pivot row, where ``l_t`` is its multiplier of step ``t`` (final from
    then on) and ``u_t`` the entry of step ``t``'s pivot row in column ``c``. Here
    the update of a row at position ``i > t`` by step ``t`` happens later or
    earlier, but: its position is ``> t`` exactly when it was not a pivot row of the
    steps up to ``t`` (pivot rows keep their positions ``0..t`` from then on), so it
    gets the same updates; each entry gets them in increasing ``t`` (every loop
    above visits the steps in order, and a group's earlier steps come before its
    own); ``u_t = P[t, c]`` is read only after row ``t`` got all of its updates of
    steps ``< t``; and a column's pivot is chosen after it got all of the steps
    before it. The pivot search compares magnitudes by their bits (see ``_pivot``),
    which orders them as the comparisons of ``|x|`` do.
    """
    check_panel(W, k, w, piv)
    return int(_lu_panel(W, k, w, piv))


@_jit
def _cholesky_block(D):
    n = D.shape[0]
    for j in range(n):
        d = D[j, j]
        if not d > 0:
            return j
        r = np.sqrt(d)
        D[j, j] = r
        for i in range(j + 1, n):
            D[i, j] = D[i, j] / r
        lj = np.ascontiguousarray(D[:, j])
        for i in range(j + 1, n):
            _axpy(D[i, j + 1:i + 1], lj[i], lj[j + 1:i + 1])
    return -1


def cholesky_block(D: np.ndarray, offset: int) -> None:
    """Lower Cholesky factor of the symmetric block ``D`` (its lower triangle), in place.

    Right-looking, column by column; reads and writes the lower triangle of ``D``
    only. Raises ``LinAlgError`` as LAPACK's ``potrf`` reports it (the leading
    minor ``offset + j + 1`` is not positive definite) when a pivot is not
    positive (NaN included); ``D`` then holds the first ``j`` steps.
    """
    j = int(_cholesky_block(D))
    if j >= 0:
        raise np.linalg.LinAlgError(
            f"{offset + j + 1}-th leading minor of the array is not positive definite")


@_inline
def _finish(x, d, unit):
    if not unit:
        for c in range(x.shape[0]):
            x[c] = x[c] / d


@_jit
def _forward(L, X, unit):
    # X <- L^-1 X in place, X a contiguous (n, m) block: row r gets the updates
    # x_r <- x_r - L[r, i] x_i of the rows i < r in increasing i (each x_i final by
    # then), then its division, which is the sequence the row gets in the step-by-step
    # substitution. Rows go in pairs (sharing the loads of x_i) and take four x_i per
    # pass (one load and store of x_r), evaluated left to right.
    n, m = X.shape
    for r in range(0, n - 1, 2):
        x, z = X[r], X[r + 1]
        i = 0
        while i + 4 <= r:
            y0, y1, y2, y3 = X[i], X[i + 1], X[i + 2], X[i + 3]
            a0, a1, a2, a3 = L[r, i], L[r, i + 1], L[r, i + 2], L[r, i + 3]
            b0, b1, b2, b3 = L[r + 1, i], L[r + 1, i + 1], L[r + 1, i + 2], L[r + 1, i + 3]
            for c in range(m):
                v0, v1, v2, v3 = y0[c], y1[c], y2[c], y3[c]
                x[c] = (((x[c] - a0 * v0) - a1 * v1) - a2 * v2) - a3 * v3
                z[c] = (((z[c] - b0 * v0) - b1 * v1) - b2 * v2) - b3 * v3
            i += 4
        for s in range(i, r):
            _axpy(x, L[r, s], X[s])
            _axpy(z, L[r + 1, s], X[s])
        _finish(x, L[r, r], unit)
        _axpy(z, L[r + 1, r], x)
        _finish(z, L[r + 1, r + 1], unit)
    if n % 2:
        x = X[n - 1]
        for s in range(n - 1):
            _axpy(x, L[n - 1, s], X[s])
        _finish(x, L[n - 1, n - 1], unit)


@_jit
def _forward_blocks(b0, b1, L, B, unit):
    # the blocks b0..b1-1 of _COLS columns of B, each copied (exactly) into a
    # contiguous buffer, solved there and copied back
    n, q = B.shape
    buf = np.empty(n * _COLS)
    for b in range(b0, b1):
        c0 = b * _COLS
        m = min(_COLS, q - c0)
        X = buf[:n * m].reshape((n, m))
        for i in range(n):
            for c in range(m):
                X[i, c] = B[i, c0 + c]
        _forward(L, X, unit)
        for i in range(n):
            for c in range(m):
                B[i, c0 + c] = X[i, c]


def _solve(L: np.ndarray, B: np.ndarray, unit: bool) -> None:
    n, q = B.shape
    if n == 0 or q == 0:
        return
    blocks = -(-q // _COLS)
    parallel.run(_forward_blocks, blocks, L, B, unit,
                 max_threads=None if n * n * q >= _PARALLEL_WORK else 1)


def unit_lower_solve(L: np.ndarray, B: np.ndarray) -> None:
    """``B <- L^-1 B`` for the unit lower triangle of ``L`` (in place; see :func:`lower_solve`)."""
    _solve(L, B, True)


def lower_solve(L: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- L^-1 B`` for the lower triangle of ``L`` (strictly lower part only if ``unit``).

    Parameters
    ----------
    L : ndarray, float64, shape (n, n), any strides
        Only its lower triangle is read (its strictly lower part if ``unit``).
    B : ndarray, float64, shape (n, q), any strides
        The right-hand sides; overwritten by the solution.
    unit : bool
        Whether the diagonal of ``L`` is taken as ones.

    The bits are those of forward substitution step by step: step ``i`` divides row
    ``i`` of ``B`` by ``L[i, i]`` (unless ``unit``), then ``B[r] <- B[r] - L[r, i] *
    B[i]`` for ``r > i``. Work order: blocks of 64 columns, copied (exactly) into a
    contiguous buffer, run on ozaki's pass threads (the blocks are independent: a
    column's operations involve that column only, so neither the cut nor the thread
    count changes a bit); inside a block, row by row, each row getting its updates
    in the order of the steps (see ``_forward``).
    """
    _solve(L, B, bool(unit))


def upper_solve(U: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- U^-1 B`` for the upper triangle of ``U`` (backward substitution, in place).

    Step ``i = n-1, ..., 0`` divides row ``i`` by ``U[i, i]`` (unless ``unit``), then
    ``B[r] <- B[r] - U[r, i] * B[i]`` for ``r < i``. Reversing the order of the rows
    and columns (``U[::-1, ::-1]``, lower triangular, and ``B[::-1]``) turns it into
    :func:`lower_solve`, step ``n-1-i`` doing the same operations on the same
    operands: that is how it runs.
    """
    _solve(U[::-1, ::-1], B[::-1], bool(unit))


def first_zero(d: np.ndarray) -> int:
    """Index of the first exact zero of ``d``, or -1."""
    z = np.flatnonzero(d == 0)
    return int(z[0]) if z.size else -1

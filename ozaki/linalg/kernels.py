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

The kernels run single-threaded (no ``parallel=True``; ``nogil`` so that callers'
threads may overlap them with other work) and use numpy's error model: a division
by zero gives an IEEE infinity or NaN, as numpy does, and never raises.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["lu_panel", "cholesky_block", "unit_lower_solve", "lower_solve", "upper_solve",
           "first_zero"]

_jit = nb.njit(cache=True, nogil=True, error_model="numpy")

_SUB = 16  # columns per sub-panel of lu_panel (its deferred updates keep rows in cache)


@nb.njit(inline="always", nogil=True, error_model="numpy")
def _axpy(x, a, y):
    """``x[c] <- x[c] - a * y[c]`` (1-D, the length of ``x``): two roundings per entry."""
    for c in range(x.shape[0]):
        x[c] = x[c] - a * y[c]


@_jit
def _lu_panel(W, k, w, piv):
    # The panel W[k:, k:k+w] is factored in a contiguous copy P (exact copies: the
    # same operands, so the same bits), its interchanges applied to the rest of
    # W's rows afterwards, in order (a permutation: same result as interchanging
    # whole rows at each step).
    m, n = W.shape
    h = m - k
    P = np.empty((h, w))
    for i in range(h):
        for c in range(w):
            P[i, c] = W[k + i, k + c]
    zero = -1
    for j in range(w):
        if j % _SUB == 0:
            j0 = j
            e = min(j + _SUB, w)
        # pivot: the first index of the largest |P[i, j]|, i >= j; a NaN wins at
        # once (numpy's argmax)
        p = j
        best = abs(P[j, j])
        if best == best:
            for i in range(j + 1, h):
                v = abs(P[i, j])
                if v != v:
                    p = i
                    break
                if v > best:
                    best = v
                    p = i
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
        # the rank-1 update of step j, within the sub-panel only
        if j + 1 < e:
            u = P[j, j + 1:e]
            for i in range(j + 1, h):
                _axpy(P[i, j + 1:e], P[i, j], u)
        if j + 1 == e and e < w:
            # the deferred updates of steps j0..e-1 on columns e:w, row by row; rows
            # j0+1..e-1 first, in order (they are the u of the later steps)
            for i in range(j0 + 1, h):
                x = P[i, e:]
                for t in range(j0, min(i, e)):
                    _axpy(x, P[i, t], P[t, e:])
    for i in range(h):
        for c in range(w):
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


def lu_panel(W: np.ndarray, k: int, w: int, piv: np.ndarray) -> int:
    """Factor columns ``k:k+w`` of ``W`` (rows ``k:``) in place, LAPACK's partial pivoting.

    For each column ``j``: the pivot is the first row of largest magnitude in
    ``W[j:, j]`` (a NaN, the first one, wins, as numpy's ``argmax``); ``piv[j]``
    records its global index; whole rows of ``W`` are interchanged (the columns
    left and right of the panel too, as ``dlaswp`` does); the column below the
    pivot is divided by it and the rest of the panel gets the rank-1 update
    ``W[i, c] <- W[i, c] - W[i, j] * W[j, c]``. An exactly zero pivot (the whole
    column is zero) is skipped, as LAPACK skips it. Returns the 0-based column of
    the first zero pivot, or -1.

    Work order (not arithmetic): the panel is copied into a contiguous buffer; the
    rank-1 updates of each group of ``_SUB`` steps are applied at once to the
    columns right of the group, row by row (for cache locality). Every entry still
    receives the same updates ``fl(w - fl(l u))``, with the same operands, in the
    order of the steps; the interchanges outside the panel are applied after it,
    in order (a permutation). So the bits are those of the step-by-step
    formulation above.
    """
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


@_jit
def _lower_solve(L, B, unit):
    # B <- L^-1 B, column-oriented: step i divides row i (unless unit), then
    # B[r] <- B[r] - L[r, i] * B[i] for r > i. Each entry sees the steps in order
    # of i whatever the loop order, so the loops follow B's layout.
    n = L.shape[0]
    q = B.shape[1]
    if B.strides[1] <= B.strides[0]:  # rows contiguous-ish: row operations
        for i in range(n):
            bi = B[i]
            if not unit:
                d = L[i, i]
                for c in range(q):
                    bi[c] = bi[c] / d
            for r in range(i + 1, n):
                _axpy(B[r], L[r, i], bi)
    else:  # columns contiguous: one column of B at a time
        Lt = np.ascontiguousarray(L.T)
        for c in range(q):
            x = B[:, c]
            for i in range(n):
                if not unit:
                    x[i] = x[i] / L[i, i]
                _axpy(x[i + 1:], x[i], Lt[i, i + 1:])


@_jit
def _upper_solve(U, B, unit):
    # B <- U^-1 B, backward: step i divides row i (unless unit), then
    # B[r] <- B[r] - U[r, i] * B[i] for r < i.
    n = U.shape[0]
    q = B.shape[1]
    if B.strides[1] <= B.strides[0]:
        for i in range(n - 1, -1, -1):
            bi = B[i]
            if not unit:
                d = U[i, i]
                for c in range(q):
                    bi[c] = bi[c] / d
            for r in range(i):
                _axpy(B[r], U[r, i], bi)
    else:
        Ut = np.ascontiguousarray(U.T)
        for c in range(q):
            x = B[:, c]
            for i in range(n - 1, -1, -1):
                if not unit:
                    x[i] = x[i] / U[i, i]
                _axpy(x[:i], x[i], Ut[i, :i])


def unit_lower_solve(L: np.ndarray, B: np.ndarray) -> None:
    """``B <- L^-1 B`` for the unit lower triangle of ``L`` (column-oriented, in place)."""
    _lower_solve(L, B, True)


def lower_solve(L: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- L^-1 B`` for the lower triangle of ``L`` (strictly lower part only if ``unit``)."""
    _lower_solve(L, B, bool(unit))


def upper_solve(U: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- U^-1 B`` for the upper triangle of ``U`` (backward, column-oriented, in place)."""
    _upper_solve(U, B, bool(unit))


def first_zero(d: np.ndarray) -> int:
    """Index of the first exact zero of ``d``, or -1."""
    z = np.flatnonzero(d == 0)
    return int(z[0]) if z.size else -1

"""The O(n^2 nb) work: unblocked kernels in numpy, in a fixed order of IEEE operations.

Every kernel here is a sequence of numpy element-wise ufuncs (``/``, ``*``, ``-``,
``sqrt``) and ``argmax``: each result entry is one IEEE operation on given
operands, never a reduction whose order could depend on SIMD width or threads, and
never a BLAS or LAPACK call. A rank-1 update ``A -= l u^T`` rounds ``l_i u_j``, then
the difference (two roundings, no fused multiply-add), in the order of the columns.
So the bits depend only on the operands.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lu_panel", "cholesky_block", "unit_lower_solve", "lower_solve", "upper_solve",
           "first_zero"]


def lu_panel(W: np.ndarray, k: int, w: int, piv: np.ndarray) -> int:
    """Factor columns ``k:k+w`` of ``W`` (rows ``k:``) in place, LAPACK's partial pivoting.

    For each column ``j``: the pivot is the first row of largest magnitude in
    ``W[j:, j]``; ``piv[j]`` records its global index; whole rows of ``W`` are
    interchanged (the columns left and right of the panel too, as ``dlaswp``
    does); the column below the pivot is divided by it and the rest of the panel
    gets the rank-1 update. An exactly zero pivot (the whole column is zero) is
    skipped, as LAPACK skips it. Returns the 0-based column of the first zero
    pivot, or -1.
    """
    zero = -1
    end = k + w
    for j in range(k, end):
        p = j + int(np.argmax(np.abs(W[j:, j])))
        piv[j] = p
        if W[p, j] != 0:
            if p != j:
                W[[j, p], :] = W[[p, j], :]
            W[j + 1:, j] /= W[j, j]
        elif zero < 0:
            zero = j
        if j + 1 < end:
            W[j + 1:, j + 1:end] -= W[j + 1:, j, None] * W[j, None, j + 1:end]
    return zero


def cholesky_block(D: np.ndarray, offset: int) -> None:
    """Lower Cholesky factor of the symmetric block ``D`` (its lower triangle), in place.

    Right-looking, column by column; writes both triangles of ``D`` (the upper one
    is scratch). Raises ``LinAlgError`` as LAPACK's ``potrf`` reports it (the
    leading minor ``offset + j + 1`` is not positive definite) when a pivot is not
    positive (NaN included).
    """
    n = D.shape[0]
    for j in range(n):
        d = D[j, j]
        if not d > 0:
            raise np.linalg.LinAlgError(
                f"{offset + j + 1}-th leading minor of the array is not positive definite")
        D[j, j] = r = np.sqrt(d)
        if j + 1 < n:
            D[j + 1:, j] /= r
            D[j + 1:, j + 1:] -= D[j + 1:, j, None] * D[None, j + 1:, j]


def unit_lower_solve(L: np.ndarray, B: np.ndarray) -> None:
    """``B <- L^-1 B`` for the unit lower triangle of ``L`` (column-oriented, in place)."""
    n = L.shape[0]
    for i in range(n - 1):
        B[i + 1:] -= L[i + 1:, i, None] * B[i]


def lower_solve(L: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- L^-1 B`` for the lower triangle of ``L`` (strictly lower part only if ``unit``)."""
    if unit:
        return unit_lower_solve(L, B)
    n = L.shape[0]
    for i in range(n):
        B[i] /= L[i, i]
        if i + 1 < n:
            B[i + 1:] -= L[i + 1:, i, None] * B[i]


def upper_solve(U: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- U^-1 B`` for the upper triangle of ``U`` (backward, column-oriented, in place)."""
    for i in range(U.shape[0] - 1, -1, -1):
        if not unit:
            B[i] /= U[i, i]
        if i > 0:
            B[:i] -= U[:i, i, None] * B[i]


def first_zero(d: np.ndarray) -> int:
    """Index of the first exact zero of ``d``, or -1."""
    z = np.flatnonzero(d == 0)
    return int(z[0]) if z.size else -1

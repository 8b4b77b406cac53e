"""Blocked triangular solves: :func:`solve_triangular` and the block TRSM under it.

``T X = B`` with ``T`` triangular, by blocks of ``nb`` rows of ``X``: the
diagonal block's small solve is deterministic compiled code
(:mod:`ozaki.linalg.kernels`, ``O(nb^2 k)`` per block); the rest of ``B`` is
updated by one product per block, ``B_rest <- B_rest - T_rest,blk X_blk``,
through :func:`ozaki.gemm` (right-looking: the block just solved is
eliminated from all rows still to be solved). Only the referenced triangle
of ``T`` is read. Block boundaries are multiples of ``nb`` from the first row
(for upper and lower triangles alike), so a solve's bits depend only on the
operands, ``nb`` and the product options. Complex operands: the kernels of
:mod:`ozaki.linalg.zkernels` and the complex product.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import zkernels
from .arguments import (DEFAULT_BLOCK_SIZE, block_size_of, lapack_dtype, matrix,
                        product_options, rhs, same_kind, trans_of)
from .info import Recorder, result

__all__ = ["solve_triangular", "trsm"]


def trsm(T: np.ndarray, B: np.ndarray, lower: bool, unit: bool, nb: int,
         rec: Recorder) -> None:
    """``B <- T^-1 B`` in place (``T`` may be a transposed view; ``T`` and ``B`` both real
    or both complex)."""
    kernels = zkernels.of(T, B)
    n = T.shape[0]
    if n == 0 or B.shape[1] == 0:
        return
    starts = list(range(0, n, nb))
    if lower:
        for k in starts:
            e = min(k + nb, n)
            with rec.phase("triangular"):
                kernels.lower_solve(T[k:e, k:e], B[k:e], unit)
            if e < n:
                rec.update(B[e:], T[e:, k:e], B[k:e], out=B[e:])
    else:
        for k in reversed(starts):
            e = min(k + nb, n)
            with rec.phase("triangular"):
                kernels.upper_solve(T[k:e, k:e], B[k:e], unit)
            if k > 0:
                rec.update(B[:k], T[:k, k:e], B[k:e], out=B[:k])


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False,
                     check_finite: bool = True, *, block_size: int = DEFAULT_BLOCK_SIZE,
                     return_info: bool = False, **product_options_):
    """Solve ``op(a) x = b`` for ``x``, ``a`` triangular (scipy.linalg.solve_triangular).

    Parameters
    ----------
    a : (M, M) array_like
        Only the triangle selected by ``lower`` is read (and not its diagonal
        when ``unit_diagonal``).
    b : (M,) or (M, N) array_like
    trans : {0, 1, 2, 'N', 'T', 'C'}
        ``a x = b`` (0, 'N'), ``a^T x = b`` (1, 'T') or ``a^H x = b`` (2, 'C': the
        transpose for real matrices).
    lower, unit_diagonal, overwrite_b, check_finite
        As in scipy.linalg.solve_triangular.
    block_size : int
        Rows of ``x`` solved per block (default 256).
    return_info : bool
        Also return a :class:`~ozaki.linalg.LinalgInfo`.
    **product_options_
        ``scheme``, ``num_moduli``, ``mode``, ``engine``, ``fallback``: passed to
        :func:`ozaki.gemm` for the block updates.

    Returns
    -------
    x : ndarray, the shape of ``b``
        scipy's dtype: float32 or complex64 when ``a`` and ``b`` are single precision
        (float16/32, complex64, bool, 8/16-bit integers), else float64 or complex128;
        complex when either is (a real ``a`` is then taken as complex).

    Raises
    ------
    LinAlgError
        A zero on the diagonal (not with ``unit_diagonal``): "singular matrix:
        resolution failed at diagonal i" (0-based, as scipy).
    ValueError
        Non-square ``a``, incompatible shapes, non-finite values with
        ``check_finite``, bad ``trans``.
    """
    nb = block_size_of(block_size)
    opts = product_options("solve_triangular", product_options_)
    t = trans_of(trans)
    A, a0, _ = matrix(a, "a", check_finite, False)
    X, b0, _ = rhs(b, A.shape[0], check_finite, overwrite_b, A.shape)
    A, X = same_kind(A, X)
    rec = Recorder("solve_triangular", A.shape, nb, opts)
    if not unit_diagonal:
        z = zkernels.first_zero(np.diagonal(A))
        if z >= 0:
            raise np.linalg.LinAlgError(f"singular matrix: resolution failed at diagonal {z}")
    if t == 2 and A.dtype.kind == "c":
        A = A.conj()  # a^H = conj(a)^T (a work copy: conjugation is exact)
    T, low = (A, lower) if t == 0 else (A.T, not lower)
    trsm(T, X, low, bool(unit_diagonal), nb, rec)
    dt = lapack_dtype(a0, b0)
    x = X.reshape(b0.shape)
    if dt != x.dtype:
        x = x.astype(dt)
    return result(x, rec, return_info)

"""Dense solvers on the factorisations: :func:`solve`, :func:`inv`, :func:`det`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .cholesky import factor as cholesky_in_place
from .lu import factor as lu_in_place
from .lu import solve_factored
from .arguments import (DEFAULT_BLOCK_SIZE, block_size_of, matrix, product_options, rhs)
from .info import Recorder, result
from .triangular import trsm

__all__ = ["solve", "inv", "det"]

_GENERAL = (None, "gen", "general", "sym", "symmetric")
_POSITIVE = ("pos", "positive definite")
_TRIANGULAR = {"lower triangular": True, "upper triangular": False}


def _kind(assume_a) -> str:
    if assume_a in _GENERAL:
        return "gen"
    if assume_a in _POSITIVE:
        return "pos"
    if assume_a in _TRIANGULAR:
        return assume_a
    raise ValueError(f"assume_a must be one of 'gen', 'general', 'sym', 'symmetric', 'pos', "
                     f"'positive definite', 'lower triangular', 'upper triangular' or None; "
                     f"got {assume_a!r} (other structures are not supported by ozaki.linalg)")


def _singular():
    return np.linalg.LinAlgError("Matrix is singular.")


def _solve_into(A: np.ndarray, X: np.ndarray, kind: str, lower: bool, transposed: bool,
                nb: int, rec: Recorder) -> None:
    """``X <- op(A)^-1 X`` with ``A`` a float64 work array (destroyed)."""
    if kind == "gen":
        piv, zero = lu_in_place(A, nb, rec)
        if zero >= 0:
            raise _singular()
        solve_factored(A, piv, X, 1 if transposed else 0, nb, rec)
    elif kind == "pos":
        L = A if lower else A.T
        cholesky_in_place(L, nb, rec)
        trsm(L, X, True, False, nb, rec)
        trsm(L.T, X, False, False, nb, rec)
    else:
        low = _TRIANGULAR[kind]
        if np.any(np.diagonal(A) == 0):
            raise _singular()
        T, low = (A.T, not low) if transposed else (A, low)
        trsm(T, X, low, False, nb, rec)


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, check_finite: bool = True, assume_a: str | None = None,
          transposed: bool = False, *, block_size: int = DEFAULT_BLOCK_SIZE,
          return_info: bool = False, **product_options_):
    """Solve ``a x = b`` (``a^T x = b`` with ``transposed``), as scipy.linalg.solve.

    Parameters
    ----------
    a : (N, N) array_like
    b : (N,) or (N, ...) array_like
    lower : bool
        With ``assume_a="pos"``: read the lower triangle of ``a`` (else the upper).
    assume_a : str or None
        ``None``, ``"gen"``, ``"general"``, ``"sym"``, ``"symmetric"``, ``"pos"``,
        ``"positive definite"``, ``"lower triangular"`` or ``"upper triangular"``.
        ``None``, ``"gen"`` and ``"sym"``: LU with partial pivoting
        (:func:`~ozaki.linalg.lu_factor`; no symmetric-indefinite factorisation,
        no structure detection); ``"pos"``: Cholesky; triangular: one blocked
        triangular solve.
    overwrite_a, overwrite_b, check_finite, transposed
        As scipy.
    block_size, return_info, **product_options_
        As :func:`~ozaki.linalg.lu_factor`.

    Returns
    -------
    x : ndarray, the shape of ``b``

    Raises
    ------
    LinAlgError
        "Matrix is singular." (an exact zero pivot), or a non-positive-definite
        ``a`` with ``assume_a="pos"``. Unlike scipy, no reciprocal condition
        estimate is computed, so no ill-conditioning warning is given.
    ValueError
        Non-square ``a``, incompatible shapes, non-finite values with
        ``check_finite``, unknown ``assume_a``.
    """
    nb = block_size_of(block_size)
    opts = product_options("solve", product_options_)
    kind = _kind(assume_a)
    A, _, adt = matrix(a, "a", check_finite, overwrite_a)
    X, b0, bdt = rhs(b, A.shape[0], check_finite, overwrite_b, A.shape)
    rec = Recorder("solve", A.shape, nb, opts)
    _solve_into(A, X, kind, bool(lower), bool(transposed), nb, rec)
    x = X.reshape(b0.shape)
    dt = np.promote_types(adt, bdt)
    if dt != np.float64:
        x = x.astype(dt)
    return result(x, rec, return_info)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True, *,
        assume_a: str | None = None, lower: bool = False,
        block_size: int = DEFAULT_BLOCK_SIZE, return_info: bool = False, **product_options_):
    """Inverse of a square matrix, as scipy.linalg.inv: :func:`solve` with the identity.

    ``assume_a`` and ``lower`` as :func:`solve` (``"pos"``: through Cholesky).
    Raises ``LinAlgError("Matrix is singular.")`` on an exact zero pivot.
    """
    nb = block_size_of(block_size)
    opts = product_options("inv", product_options_)
    kind = _kind(assume_a)
    A, _, dt = matrix(a, "a", check_finite, overwrite_a)
    rec = Recorder("inv", A.shape, nb, opts)
    X = np.eye(A.shape[0])
    _solve_into(A, X, kind, bool(lower), False, nb, rec)
    return result(X if dt == np.float64 else X.astype(dt), rec, return_info)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True, *,
        block_size: int = DEFAULT_BLOCK_SIZE, return_info: bool = False, **product_options_):
    """Determinant from the LU factorisation, as scipy.linalg.det.

    The product of ``U``'s diagonal in order (a Python loop: a fixed order of
    roundings), negated once per row interchange. ``0.0`` for an exactly singular
    matrix, ``1.0`` for a 0 x 0 one. Returns a numpy float64 scalar (float32 input
    too, as scipy).
    """
    nb = block_size_of(block_size)
    opts = product_options("det", product_options_)
    A, _, _ = matrix(a, "a", check_finite, overwrite_a)
    rec = Recorder("det", A.shape, nb, opts)
    piv, _ = lu_in_place(A, nb, rec)
    d = 1.0
    for i in range(A.shape[0]):
        d *= float(A[i, i])
    if int(np.count_nonzero(piv != np.arange(len(piv)))) % 2:
        d = -d
    return result(np.float64(d), rec, return_info)

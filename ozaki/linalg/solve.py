"""Dense solvers on the factorisations: :func:`solve`, :func:`inv`, :func:`det`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .cholesky import factor as cholesky_in_place
from .cholesky import solve_factored as cholesky_solve
from .lu import factor as lu_in_place
from .lu import solve_factored
from .arguments import (DEFAULT_BLOCK_SIZE, block_size_of, matrix, product_options, rhs,
                        same_kind, solve_dtype)
from .info import Recorder, result
from .triangular import trsm

__all__ = ["solve", "inv", "det"]

_GENERAL = (None, "gen", "general", "sym", "symmetric", "her", "hermitian")
_POSITIVE = ("pos", "positive definite")
_TRIANGULAR = {"lower triangular": True, "upper triangular": False}


def _kind(assume_a) -> str:
    if assume_a in _GENERAL:
        return "gen"
    if assume_a in _POSITIVE:
        return "pos"
    if assume_a in _TRIANGULAR:
        return assume_a
    raise ValueError(f"assume_a must be one of 'gen', 'general', 'sym', 'symmetric', 'her', "
                     f"'hermitian', 'pos', 'positive definite', 'lower triangular', "
                     f"'upper triangular' or None; "
                     f"got {assume_a!r} (other structures are not supported by ozaki.linalg)")


def _singular():
    return np.linalg.LinAlgError("Matrix is singular.")


def _solve_into(A: np.ndarray, X: np.ndarray, kind: str, lower: bool, transposed: bool,
                nb: int, rec: Recorder) -> None:
    """``X <- op(A)^-1 X`` with ``A`` a float64 or complex128 work array (destroyed; ``X``
    of the same kind); ``op(A) = A^T`` with ``transposed`` (not conjugated)."""
    if kind == "gen":
        piv, zero = lu_in_place(A, nb, rec)
        if zero >= 0:
            raise _singular()
        solve_factored(A, piv, X, 1 if transposed else 0, nb, rec)
    elif kind == "pos":
        if transposed and A.dtype.kind == "c":
            A = A.conj()  # A^T = conj(A) for a Hermitian A, Hermitian positive definite too
        cholesky_in_place(A if lower else A.T, nb, rec)
        cholesky_solve(A, lower, X, nb, rec)
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
        Real or complex.
    b : (N,) or (N, ...) array_like
    lower : bool
        With ``assume_a="pos"``: read the lower triangle of ``a`` (else the upper).
    assume_a : str or None
        ``None``, ``"gen"``, ``"general"``, ``"sym"``, ``"symmetric"``, ``"her"``,
        ``"hermitian"``, ``"pos"``, ``"positive definite"``, ``"lower triangular"``
        or ``"upper triangular"``. ``None``, ``"gen"``, ``"sym"`` and ``"her"``: LU
        with partial pivoting (:func:`~ozaki.linalg.lu_factor`; no symmetric- or
        Hermitian-indefinite factorisation, no structure detection); ``"pos"``:
        Cholesky (Hermitian for complex ``a``); triangular: one blocked
        triangular solve.
    overwrite_a, overwrite_b, check_finite
        As scipy.
    transposed : bool
        Solve ``a^T x = b`` (the plain transpose, complex ``a`` too, where
        scipy raises ``NotImplementedError``).
    block_size, return_info, **product_options_
        As :func:`~ozaki.linalg.lu_factor`.

    Returns
    -------
    x : ndarray, the shape of ``b``
        scipy.linalg.solve's dtype: ``np.result_type(a, b)`` in single (at most 32
        bits: float32, complex64) or double precision; float64 for bool and integer
        inputs. Complex when ``a`` or ``b`` is (a real ``a`` is then taken as complex).

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
    A, a0, _ = matrix(a, "a", check_finite, overwrite_a)
    X, b0, _ = rhs(b, A.shape[0], check_finite, overwrite_b, A.shape)
    A, X = same_kind(A, X)
    rec = Recorder("solve", A.shape, nb, opts)
    _solve_into(A, X, kind, bool(lower), bool(transposed), nb, rec)
    x = X.reshape(b0.shape)
    dt = solve_dtype(a0, b0)
    if dt != x.dtype:
        x = x.astype(dt)
    return result(x, rec, return_info)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True, *,
        assume_a: str | None = None, lower: bool = False,
        block_size: int = DEFAULT_BLOCK_SIZE, return_info: bool = False, **product_options_):
    """Inverse of a square matrix, as scipy.linalg.inv: :func:`solve` with the identity.

    ``assume_a`` and ``lower`` as :func:`solve` (``"pos"``: through Cholesky).
    Raises ``LinAlgError("Matrix is singular.")`` on an exact zero pivot. Returns
    scipy's dtype: that of :func:`~ozaki.linalg.lu_factor` (float32 for single
    precision input, complex64 for complex64).
    """
    nb = block_size_of(block_size)
    opts = product_options("inv", product_options_)
    kind = _kind(assume_a)
    A, _, dt = matrix(a, "a", check_finite, overwrite_a)
    rec = Recorder("inv", A.shape, nb, opts)
    X = np.eye(A.shape[0], dtype=A.dtype)
    _solve_into(A, X, kind, bool(lower), False, nb, rec)
    return result(X if dt == X.dtype else X.astype(dt), rec, return_info)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True, *,
        block_size: int = DEFAULT_BLOCK_SIZE, return_info: bool = False, **product_options_):
    """Determinant from the LU factorisation, as scipy.linalg.det.

    The product of ``U``'s diagonal in order (a Python loop: a fixed order of
    roundings; complex products spelled out in real operations,
    ``(dr ur - di ui, dr ui + di ur)``, so no fused multiply-add can enter), negated
    once per row interchange. ``0.0`` for an exactly singular matrix, ``1.0`` for a
    0 x 0 one. Returns a numpy float64 scalar for real input (float32 too, as scipy),
    a numpy complex128 one for complex input (complex64 too).
    """
    nb = block_size_of(block_size)
    opts = product_options("det", product_options_)
    A, _, _ = matrix(a, "a", check_finite, overwrite_a)
    rec = Recorder("det", A.shape, nb, opts)
    piv, _ = lu_in_place(A, nb, rec)
    odd = int(np.count_nonzero(piv != np.arange(len(piv)))) % 2
    if A.dtype.kind != "c":
        d = 1.0
        for i in range(A.shape[0]):
            d *= float(A[i, i])
        return result(np.float64(-d if odd else d), rec, return_info)
    dr, di = 1.0, 0.0
    for i in range(A.shape[0]):
        ur, ui = float(A[i, i].real), float(A[i, i].imag)
        dr, di = dr * ur - di * ui, dr * ui + di * ur
    if odd:
        dr, di = -dr, -di
    return result(np.complex128(complex(dr, di)), rec, return_info)

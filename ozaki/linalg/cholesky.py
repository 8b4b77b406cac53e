"""Cholesky factorisation: :func:`cho_factor`, :func:`cho_solve`, :func:`cholesky`.

Blocked right-looking, lower form ``A = L L^T`` (the upper form factors the
transpose: ``U = L^T`` from the upper triangle of ``A``), for each block column
``k:k+nb``:

1. ``L11 = chol(A11)``: unblocked, deterministic compiled kernel (:mod:`ozaki.linalg.kernels`);
2. ``L21 <- A21 L11^-T``: the small triangular solve on the diagonal block (compiled kernel);
3. ``A22 <- A22 - L21 L21^T``: one product through :func:`ozaki.gemm`.

Right-looking for the reason given in :mod:`ozaki.linalg.lu`: one large product per
block column. The product is a full GEMM of which only the lower triangle is kept
(a SYRK-shaped update would halve its flops: future work). Only the triangle
selected by ``lower`` is read; the other triangle of ``cho_factor``'s result holds
the input's entries, as with LAPACK's ``potrf``.

Complex Hermitian matrices (``zpotrf``): ``A = L L^H``, ``L21 <- A21 L11^-H`` and
``A22 <- A22 - L21 L21^H`` (the complex product), the diagonal blocks in
:mod:`ozaki.linalg.zkernels` (the imaginary parts of the diagonal are not read; the
factor's diagonal is real). The upper form factors the transposed view as real
matrices do: its lower triangle holds ``A``'s upper one, i.e. the lower triangle of
``conj(A)``; ``conj(A) = M M^H`` gives ``A = (M^T)^H M^T``, so ``U = M^T`` lands in
``A``'s upper triangle with no conjugation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import zkernels
from .arguments import (DEFAULT_BLOCK_SIZE, block_size_of, lapack_dtype, matrix,
                        product_options, rhs, same_kind)
from .info import Recorder, result
from .triangular import trsm

__all__ = ["cho_factor", "cho_solve", "cholesky"]


def factor(W: np.ndarray, nb: int, rec: Recorder) -> None:
    """Lower Cholesky factor of ``W`` (its lower triangle) in place; ``W`` may be a view.

    ``W = L L^T`` (real) or ``L L^H`` (complex). Only the lower triangle of ``W`` is
    written. Raises ``LinAlgError`` on a non-positive pivot.
    """
    kernels = zkernels.of(W)
    cplx = W.dtype.kind == "c"
    n = W.shape[0]
    for k in range(0, n, nb):
        e = min(k + nb, n)
        with rec.phase("panel"):
            D = np.array(W[k:e, k:e])
            kernels.cholesky_block(D, k)
            low = np.tril(np.ones(D.shape, dtype=bool))
            W[k:e, k:e] = np.where(low, D, W[k:e, k:e])
        if e < n:
            with rec.phase("triangular"):
                if cplx:  # L21^H = L11^-1 A21^H (conjugation is exact)
                    B = np.array(W[e:, k:e].T.conj(), order="C")
                    kernels.lower_solve(D, B, unit=False)
                    W[e:, k:e] = B.T.conj()
                else:
                    B = np.array(W[e:, k:e].T)  # L21^T = L11^-1 A21^T
                    kernels.lower_solve(D, B, unit=False)
                    W[e:, k:e] = B.T
            L21 = W[e:, k:e]
            T = rec.update(W[e:, e:], L21, L21, trans_b="C" if cplx else True)
            with rec.phase("other"):
                low = np.tril(np.ones(T.shape, dtype=bool))
                W[e:, e:] = np.where(low, T, W[e:, e:])


def _factor(routine, a, lower, overwrite_a, check_finite, block_size, opts, clean):
    nb = block_size_of(block_size)
    opts = product_options(routine, opts)
    C, a0, dt = matrix(a, "a", check_finite, overwrite_a)
    rec = Recorder(routine, C.shape, nb, opts)
    factor(C if lower else C.T, nb, rec)
    if clean:
        C = np.tril(C) if lower else np.triu(C)
    return (C if dt == C.dtype else C.astype(dt)), rec


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True, *, block_size: int = DEFAULT_BLOCK_SIZE,
               return_info: bool = False, **product_options_):
    """Cholesky factorisation for :func:`cho_solve`, as scipy.linalg.cho_factor.

    Parameters
    ----------
    a : (M, M) array_like
        Symmetric (complex: Hermitian) positive definite; only the triangle
        selected by ``lower`` is read (and only the real part of its diagonal).
    lower : bool
        Factor ``a = L L^H`` (lower triangle) instead of ``a = U^H U`` (``^H``: the
        transpose for real ``a``).
    overwrite_a, check_finite
        As scipy (``overwrite_a``: a writable float64 or complex128 ndarray is
        factored in place).
    block_size, return_info, **product_options_
        As :func:`~ozaki.linalg.lu_factor`.

    Returns
    -------
    c : (M, M) ndarray
        The factor in the selected triangle; the other triangle holds ``a``'s
        entries. scipy's dtype (float32 for float16/32 and small integers, complex64
        for complex64).
    lower : bool

    Raises
    ------
    LinAlgError
        "k-th leading minor of the array is not positive definite", as scipy.
    ValueError
        Non-square input, non-finite values with ``check_finite``, bad ``block_size``.
    """
    c, rec = _factor("cho_factor", a, lower, overwrite_a, check_finite, block_size,
                     product_options_, clean=False)
    return result((c, bool(lower)), rec, return_info)


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True, *, block_size: int = DEFAULT_BLOCK_SIZE,
             return_info: bool = False, **product_options_):
    """Cholesky factor ``U`` (``a = U^H U``) or, with ``lower``, ``L`` (``a = L L^H``).

    As scipy.linalg.cholesky: the other triangle of the result is zero. Parameters
    and errors as :func:`cho_factor`.
    """
    c, rec = _factor("cholesky", a, lower, overwrite_a, check_finite, block_size,
                     product_options_, clean=True)
    return result(c, rec, return_info)


def solve_factored(C: np.ndarray, lower: bool, X: np.ndarray, nb: int, rec: Recorder) -> None:
    """``X <- a^-1 X`` in place from a factor in ``C`` (``a = L L^H``, ``L`` the lower
    triangle of ``C``; or ``a = U^H U``, ``U`` its upper triangle). ``C`` and ``X`` are
    both real or both complex."""
    if np.iscomplexobj(C):
        CH = C.conj().T  # a copy: conjugation is exact
        L, LH = (C, CH) if lower else (CH, C)
    else:
        L = C if lower else C.T
        LH = L.T
    trsm(L, X, True, False, nb, rec)
    trsm(LH, X, False, False, nb, rec)


def cho_solve(c_and_lower: tuple, b: Any, overwrite_b: bool = False,
              check_finite: bool = True, *, block_size: int = DEFAULT_BLOCK_SIZE,
              return_info: bool = False, **product_options_):
    """Solve ``a x = b`` from :func:`cho_factor`'s ``(c, lower)``, as scipy.linalg.cho_solve.

    Two blocked triangular solves (diagonal blocks in compiled kernels, block updates through
    :func:`ozaki.gemm`); only the factor's triangle is read.
    """
    nb = block_size_of(block_size)
    opts = product_options("cho_solve", product_options_)
    c, lower = c_and_lower
    C, c0, _ = matrix(c, "c", check_finite, False)
    X, b0, _ = rhs(b, C.shape[0], check_finite, overwrite_b, C.shape)
    C, X = same_kind(C, X)
    rec = Recorder("cho_solve", C.shape, nb, opts)
    solve_factored(C, bool(lower), X, nb, rec)
    x = X.reshape(b0.shape)
    dt = lapack_dtype(c0, b0)
    if dt != x.dtype:
        x = x.astype(dt)
    return result(x, rec, return_info)

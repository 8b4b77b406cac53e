"""LU factorisation with partial pivoting: :func:`lu_factor`, :func:`lu_solve`, :func:`lu`.

Algorithm: blocked right-looking LU (LAPACK's ``dgetrf`` order). For each panel of
``nb`` columns starting at ``k``:

1. factor the panel ``A[k:, k:k+nb]`` unblocked with partial pivoting (numba,
   :func:`ozaki.linalg.kernels.lu_panel`), interchanging whole rows;
2. ``U12 <- L11^-1 A12`` (the small unit-lower solve on the diagonal block, numba);
3. ``A22 <- A22 - L21 U12``: one product through :func:`ozaki.gemm`.

Why right-looking: the trailing update is a single product per panel, as large as
the matrix allows (``(n-k-nb) x nb x (n-k-nb)``), which is where the emulation pays
off: its fixed cost (scaling decisions, residues, reconstruction) is amortised over
the largest products, and each product is certified on its own. A left-looking or
Crout variant would issue more and thinner products (``nb``-wide left or right
operands against growing inner dimensions) and a recursive one many small products
that fall below the emulation's break-even point. The panel and the diagonal
solves are ``O(n^2 nb)`` of the ``2n^3/3`` flops: for ``nb << n`` nearly all the
work is in the products.

Determinism: the panel and the small solves are fixed sequences of IEEE operations
on the operands (no BLAS or LAPACK), and each product's bits depend only on its
operands and the product options (:func:`ozaki.gemm`'s contract: not on the engine
for a given scheme and mode, not on the thread count). So ``lu``'s bits depend only
on the input, ``block_size`` and the product options.

Complex matrices (``zgetrf``): the same steps on complex128 work arrays, the panel
and the small solves in :mod:`ozaki.linalg.zkernels` (pivot of largest
``|Re| + |Im|``, as ``izamax``), the trailing update through the complex product.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import zkernels
from .arguments import (DEFAULT_BLOCK_SIZE, block_size_of, lapack_dtype, matrix,
                        product_options, rhs, same_kind, trans_of)
from .info import Recorder, result
from .triangular import trsm

__all__ = ["lu_factor", "lu_solve", "lu"]


def linalg_warning() -> type:
    """scipy.linalg's ``LinAlgWarning`` (``RuntimeWarning`` where scipy is missing)."""
    try:
        from scipy.linalg import LinAlgWarning
    except ImportError:  # pragma: no cover - scipy is a dependency of the tests only
        return RuntimeWarning
    return LinAlgWarning


def factor(W: np.ndarray, nb: int, rec: Recorder) -> tuple[np.ndarray, int]:
    """Blocked right-looking LU of ``W`` (m, n, float64 or complex128) in place;
    ``(piv, first zero pivot or -1)``."""
    kernels = zkernels.of(W)
    m, n = W.shape
    K = min(m, n)
    piv = np.arange(K, dtype=np.int32)
    zero = -1
    for k in range(0, K, nb):
        w = min(nb, K - k)
        e = k + w
        with rec.phase("panel"):
            z = kernels.lu_panel(W, k, w, piv)
        if zero < 0 and z >= 0:
            zero = z
        if e < n:
            with rec.phase("triangular"):
                kernels.unit_lower_solve(W[k:e, k:e], W[k:e, e:])
            if e < m:
                rec.update(W[e:, e:], W[e:, k:e], W[k:e, e:], out=W[e:, e:])
    return piv, zero


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True, *,
              block_size: int = DEFAULT_BLOCK_SIZE, return_info: bool = False,
              **product_options_):
    """LU factorisation with partial pivoting, as scipy.linalg.lu_factor.

    ``a = P L U`` with ``L`` unit lower triangular (trapezoidal), ``U`` upper, ``P``
    the row interchanges of LAPACK's ``getrf`` (pivot: the first entry of largest
    magnitude in the column; complex: of largest ``|Re| + |Im|``, as ``zgetrf``).
    Blocked right-looking; the trailing updates run through :func:`ozaki.gemm` (the
    complex product for complex input), the panels in deterministic compiled kernels.

    Parameters
    ----------
    a : (M, N) array_like
        Real or complex (bool, int, float16/32/64, complex64/128). Never modified
        unless ``overwrite_a``.
    overwrite_a : bool
        When ``a`` is a writable float64 or complex128 ndarray, factor it in place
        and return it as ``lu``.
    check_finite : bool
        Raise ``ValueError`` on infs or NaNs.
    block_size : int
        Panel width ``nb`` (default 256). The result's bits depend on it.
    return_info : bool
        Also return a :class:`~ozaki.linalg.LinalgInfo` (time per phase, share in
        emulated products).
    **product_options_
        ``scheme``, ``num_moduli``, ``mode``, ``engine``, ``fallback`` of
        :func:`ozaki.gemm`, for the trailing updates.

    Returns
    -------
    lu : (M, N) ndarray
        ``U`` in the upper triangle, ``L``'s multipliers below the diagonal.
        scipy's dtype: float32 for bool, 8/16-bit integers, float16 and float32,
        complex64 for complex64 (computed in float64 or complex128, then rounded),
        else float64 or complex128.
    piv : (min(M, N),) ndarray of int32
        Row ``i`` was interchanged with row ``piv[i]`` (0-based, LAPACK's order).

    Warns
    -----
    scipy.linalg.LinAlgWarning
        "Diagonal number i is exactly zero. Singular matrix." (1-based ``i``,
        the first exact zero pivot), as scipy.

    Raises
    ------
    ValueError
        Not 2-D, non-finite values with ``check_finite``, bad ``block_size``
        (``TypeError`` when not an int), unknown product options.
    """
    nb = block_size_of(block_size)
    opts = product_options("lu_factor", product_options_)
    W, a0, dt = matrix(a, "a", check_finite, overwrite_a, square_only=False)
    rec = Recorder("lu_factor", W.shape, nb, opts)
    piv, zero = factor(W, nb, rec)
    if zero >= 0:
        warnings.warn(f"Diagonal number {zero + 1} is exactly zero. Singular matrix.",
                      linalg_warning(), stacklevel=2)
    lu_ = W if dt == W.dtype else W.astype(dt)
    return result((lu_, piv), rec, return_info)


def _swaps(X: np.ndarray, piv: np.ndarray, reverse: bool) -> None:
    """Apply the interchanges ``i <-> piv[i]`` to the rows of ``X`` (in reverse order too).

    The interchanges are composed on an index vector first (integers), then ``X``'s
    rows are moved once: the same rows in the same places as interchanging them step
    by step (no arithmetic: the bits are those of the rows)."""
    pivots = piv.tolist()
    rows = list(range(X.shape[0]))
    for i in (range(len(pivots) - 1, -1, -1) if reverse else range(len(pivots))):
        p = pivots[i]
        rows[i], rows[p] = rows[p], rows[i]
    if any(p != i for i, p in enumerate(pivots)):
        X[...] = X[rows]


def solve_factored(LU: np.ndarray, piv: np.ndarray, X: np.ndarray, t: int, nb: int,
                   rec: Recorder) -> None:
    """``X <- op(A)^-1 X`` in place from ``A = P L U`` (``t``: 0 plain, 1 transposed,
    2 conjugate transposed). ``LU`` and ``X`` are both real or both complex."""
    if t == 2 and np.iscomplexobj(LU):
        LU = LU.conj()  # A^H = conj(U)^T conj(L)^T P^T: the transposed solves on conj(LU)
    if t == 0:
        with rec.phase("other"):
            _swaps(X, piv, reverse=False)
        trsm(LU, X, True, True, nb, rec)
        trsm(LU, X, False, False, nb, rec)
    else:  # A^T = U^T L^T P^T
        trsm(LU.T, X, True, False, nb, rec)
        trsm(LU.T, X, False, True, nb, rec)
        with rec.phase("other"):
            _swaps(X, piv, reverse=True)


def substitute(LU: np.ndarray, piv: np.ndarray, X: np.ndarray) -> None:
    """``X <- A^-1 X`` in place from ``A = P L U`` by plain forward and back substitution
    in FP64: the compiled kernels on the whole triangles, no products.

    For refinement's corrections (:func:`~ozaki.linalg.solve_refined`), which need a
    relative accuracy well below 1, not FP64 grade: substitution's backward error,
    ``|dT| <= n u |T|`` for each triangle (Higham, *Accuracy and Stability*, thm 8.5),
    is far below that of reduced-count factors (``u_f >> n u``). The kernels' fixed
    order of IEEE operations keeps the bits a function of the operands; ``LU`` and
    ``X`` are both real or both complex.
    """
    kernels = zkernels.of(LU, X)
    _swaps(X, piv, reverse=False)
    kernels.unit_lower_solve(LU, X)
    kernels.upper_solve(LU, X, False)


def lu_solve(lu_and_piv: tuple, b: Any, trans: int | str = 0, overwrite_b: bool = False,
             check_finite: bool = True, *, block_size: int = DEFAULT_BLOCK_SIZE,
             return_info: bool = False, **product_options_):
    """Solve ``a x = b`` (``a^T x = b``, ``a^H x = b``) from :func:`lu_factor`'s ``(lu, piv)``.

    As scipy.linalg.lu_solve. The two triangular solves are blocked
    (:func:`~ozaki.linalg.solve_triangular`'s block TRSM): diagonal blocks in
    compiled kernels, the block updates through :func:`ozaki.gemm`.

    Parameters
    ----------
    lu_and_piv : (lu, piv)
    b : (M,) or (M, ...) array_like
    trans : {0, 1, 2, 'N', 'T', 'C'}
        0: ``a x = b``; 1: ``a^T x = b``; 2: ``a^H x = b`` (``a^T`` for real ``a``).
    overwrite_b, check_finite
        As scipy.
    block_size, return_info, **product_options_
        As :func:`lu_factor`.

    Returns
    -------
    x : ndarray, the shape of ``b``
        scipy's dtype for ``lu`` and ``b`` (complex when either is; a real ``lu``
        with a complex ``b`` is solved in complex arithmetic).
    """
    nb = block_size_of(block_size)
    opts = product_options("lu_solve", product_options_)
    t = trans_of(trans)
    lu_, piv = lu_and_piv
    LU, lu0, _ = matrix(lu_, "lu", check_finite, False, square_only=False)
    if LU.shape[0] != LU.shape[1]:
        raise ValueError(f"lu must be square, got shape {LU.shape}")
    piv = np.asarray(piv)
    if piv.shape != (LU.shape[0],):
        raise ValueError(f"piv must have shape {(LU.shape[0],)}, got {piv.shape}")
    X, b0, _ = rhs(b, LU.shape[0], check_finite, overwrite_b, LU.shape)
    LU, X = same_kind(LU, X)
    rec = Recorder("lu_solve", LU.shape, nb, opts)
    solve_factored(LU, piv, X, t, nb, rec)
    x = X.reshape(b0.shape)
    dt = lapack_dtype(lu0, b0)
    if dt != x.dtype:
        x = x.astype(dt)
    return result(x, rec, return_info)


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True,
       p_indices: bool = False, *, block_size: int = DEFAULT_BLOCK_SIZE,
       return_info: bool = False, **product_options_):
    """LU decomposition ``a = P L U`` as scipy.linalg.lu (2-D arrays).

    Returns
    -------
    (p, l, u)
        ``p`` (M, M) permutation matrix, or with ``p_indices`` an int32 index
        vector with ``a == l[p] @ u``; ``l`` (M, K) unit lower trapezoidal, ``u``
        (K, N) upper, ``K = min(M, N)``. ``p`` is real (float32 or float64) for
        complex input too, as scipy's; for a 1 x 1 ``a``, as scipy's scalar case,
        ``p`` has ``a``'s dtype and the index vector is int64.
    (pl, u)
        With ``permute_l``: ``pl = p @ l`` (rows of ``l`` permuted, no arithmetic).

    Factored by :func:`lu_factor` (same parameters, same bits). An exactly
    singular matrix gives its factors without a warning, as scipy.
    """
    nb = block_size_of(block_size)
    opts = product_options("lu", product_options_)
    W, a0, dt = matrix(a, "a", check_finite, overwrite_a, square_only=False)
    rec = Recorder("lu", W.shape, nb, opts)
    piv, _ = factor(W, nb, rec)
    m, n = W.shape
    K = min(m, n)
    L = np.tril(W[:, :K], -1)
    L[np.arange(K), np.arange(K)] = 1.0
    U = np.triu(W[:K, :])
    perm = np.arange(m)  # row i of L U is row perm[i] of a
    _swaps(perm, piv, reverse=False)
    p = np.empty(m, dtype=np.int32)
    p[perm] = np.arange(m, dtype=np.int32)  # a[i] = (L U)[p[i]]
    L, U = L.astype(dt, copy=False), U.astype(dt, copy=False)
    scalar = (m, n) == (1, 1)  # scipy's scalar case: p int64, P of a's dtype (complex too)
    if permute_l:
        out = (L[p], U)
    elif p_indices:
        out = (p.astype(np.int64) if scalar else p, L, U)
    else:
        P = np.zeros((m, m), dtype=dt if scalar else np.zeros(0, dt).real.dtype)
        P[np.arange(m), p] = 1.0
        out = (P, L, U)
    return result(out, rec, return_info)


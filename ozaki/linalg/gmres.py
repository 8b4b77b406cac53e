"""GMRES for GMRES-IR: the correction step of :func:`~ozaki.linalg.solve_refined`.

:func:`gmres` finds ``d`` in the Krylov space ``K_J(M, z) = span(z, M z, ...,
M^(J-1) z)`` minimising ``||z - M d||_2``: Arnoldi builds an orthonormal basis ``V``
(n, J) of it by classical Gram-Schmidt twice (CGS2: the second pass restores the
orthogonality the first loses) and the Hessenberg ``H`` with ``M V_J = V_(J+1) H``;
Givens rotations reduce ``H`` to upper triangular as its columns come (so ``|g_(j+1)|``
is the residual norm at each step, without forming ``d``); back substitution gives
``y`` and ``d = V y``. GMRES-IR (:func:`gmres_ir`) calls it with ``M = (LU)^-1 A``
and ``z = (LU)^-1 r``: GMRES left-preconditioned by the reduced-precision factors
(Carson and Higham, 2017), ``M`` given as a function. :func:`gmres_budget` caps the
Krylov iterations per :func:`~ozaki.linalg.solve_refined` call where factoring again
costs less. Complex systems: complex Givens rotations with a real cosine.

Determinism: every product here is :func:`ozaki.gemm`'s (the Gram-Schmidt
projections ``V^H w`` and updates ``V c``, the solution ``V y``; ``M``'s are the
caller's, in GMRES-IR gemm's and the LU solve's); Euclidean norms are
``math.fsum`` of elementwise squares (:func:`norm2`, correctly rounded); the small
least-squares problem (rotations, back substitution) is solved in Python floats in a
fixed order; maxima are exact; other array arithmetic is elementwise. No numpy BLAS
call makes a result bit: the bits depend only on the inputs, ``M`` and the product
options, not on the thread count, nor on the engine for a given scheme and mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..api.front import gemm

__all__ = ["gmres", "gmres_ir", "gmres_budget", "norm2", "givens", "TAU"]

#: GMRES-IR's relative residual: FP64's unit roundoff (see :func:`gmres_ir`).
TAU = 2.0 ** -53


def gmres_budget(n: int) -> int:
    """Krylov iterations per call: the largest ``J`` whose flops, ``4n^2 J`` (products
    with ``A``, two triangular solves) plus ``4n J^2`` (Gram-Schmidt twice), stay
    within the fallback factorisation's ``2n^3/3``: beyond, refactoring is cheaper."""
    return max(1, int(n * (math.sqrt(5 / 3) - 1) / 2))


def norm2(v: Any) -> float:
    """``||v||_2 = s sqrt(fsum((v/s)**2))``, ``s = max`` of the parts' magnitudes: no
    overflow, one correctly rounded sum (no machine-dependent bits).

    Parameters
    ----------
    v : array_like, real or complex
        Any shape; the real and imaginary parts of complex entries count separately.

    Returns
    -------
    float
        The Euclidean norm (``s`` itself when it is 0, inf or NaN).
    """
    v = np.asarray(v)
    parts = [v.real, v.imag] if np.iscomplexobj(v) else [v]
    s = float(max(np.max(np.abs(p), initial=0.0) for p in parts))
    if s == 0.0 or not math.isfinite(s):
        return s
    return s * math.sqrt(math.fsum(np.concatenate([(p / s) ** 2 for p in parts]).tolist()))


def givens(a: Any, b: Any) -> tuple[Any, Any, Any]:
    """``(c, s, r)``, ``c`` real: ``[[c, s], [-conj(s), c]] @ [a, b] = [r, 0]``.

    Parameters
    ----------
    a, b : float or complex scalars

    Returns
    -------
    c : float
        The cosine, in [0, 1].
    s, r : scalars
        The sine and ``r``, ``|r| = ||(a, b)||_2`` with ``a``'s phase (``c = 1``,
        ``s = 0``, ``r = a`` when both are zero).
    """
    rho = norm2([a, b])
    if rho == 0.0:
        return 1.0, 0.0 * b, a
    na = norm2([a])
    phase = a / na if na > 0 else 1.0
    return na / rho, phase * np.conj(b) / rho, phase * rho


def gmres(operator: Callable[[np.ndarray], np.ndarray], z: np.ndarray, tau: float,
          max_iter: int, options: Mapping[str, Any]) -> tuple[np.ndarray, int]:
    """GMRES on ``M d = z`` from ``d = 0``, ``M`` given as ``operator``.

    Stops when the residual ``||z - M d||_2`` is at most ``tau ||z||_2``, after
    ``max_iter`` iterations, or at a breakdown (``h_(j+1, j) = 0``: the Krylov space is
    invariant under ``M``, and in exact arithmetic ``d`` solves ``M d = z``).

    Parameters
    ----------
    operator : callable
        ``v -> M v`` for a (n,) array ``v`` of ``z``'s dtype, returning an (n,) array.
    z : (n,) ndarray, float64 or complex128
        The right-hand side (in GMRES-IR the preconditioned residual ``(LU)^-1 r``).
    tau : float
        Relative residual to reach (dimensionless).
    max_iter : int
        Most Krylov iterations (none when below 1: ``d = 0``).
    options : mapping
        Product options of :func:`ozaki.gemm` for the Gram-Schmidt and ``V^T y``
        products.

    Returns
    -------
    d : (n,) ndarray, ``z``'s dtype
        The correction (zeros when ``z`` is zero or not finite).
    iterations : int
        The Krylov iterations taken (products with ``M``).
    """
    beta = norm2(z)
    if beta == 0.0 or not math.isfinite(beta) or max_iter < 1:
        return np.zeros_like(z), 0
    V = np.empty((8, z.size), dtype=z.dtype)  # rows: the orthonormal Krylov basis
    V[0] = z / beta
    H, rot, g = [], [], [z.dtype.type(beta)]  # rotated Hessenberg columns, rotations, rhs
    while True:
        j = len(H)
        w = operator(V[j])
        h = np.zeros(j + 2, dtype=z.dtype)
        for _ in range(2):  # classical Gram-Schmidt twice (CGS2), by products
            c = gemm(V[:j + 1].T, w[:, None], trans_a="C", **options)[:, 0]
            w = w - gemm(V[:j + 1], c[:, None], trans_a="T", **options)[:, 0]
            h[:j + 1] += c
        h[j + 1] = norm2(w)
        col = h.tolist()
        for i, (ci, si) in enumerate(rot):  # the earlier rotations, in order
            col[i], col[i + 1] = ci * col[i] + si * col[i + 1], \
                -np.conj(si) * col[i] + ci * col[i + 1]
        ci, si, col[j] = givens(col[j], col[j + 1])
        rot.append((ci, si))
        gj = g[j]
        g[j] = ci * gj
        g.append(-np.conj(si) * gj)
        H.append(col[:j + 1])
        if norm2([g[j + 1]]) <= tau * beta or h[j + 1] == 0 or len(H) >= max_iter:
            break
        if j + 2 > V.shape[0]:
            V = np.concatenate([V, np.empty_like(V)])
        V[j + 1] = w / h[j + 1]
    k = len(H)
    y = [0.0] * k
    for i in range(k - 1, -1, -1):  # back substitution, fixed order
        acc = g[i]
        for m in range(i + 1, k):
            acc = acc - H[m][i] * y[m]
        y[i] = acc / H[i][i] if H[i][i] != 0 else 0.0 * acc
    d = gemm(V[:k], np.array(y, dtype=z.dtype)[:, None], trans_a="T", **options)[:, 0]
    return d, k


def gmres_ir(solve: Callable[[np.ndarray], np.ndarray],
             product: Callable[[np.ndarray], np.ndarray], r: np.ndarray, max_iter: int,
             options: Mapping[str, Any]) -> tuple[np.ndarray, int]:
    """GMRES-IR's correction: :func:`gmres` on ``(LU)^-1 A d = (LU)^-1 r`` to :data:`TAU`.

    The inner test is normwise, ``||z - M d||_2 <= u ||z||_2`` with ``z = (LU)^-1 r``,
    ``M = (LU)^-1 A``, as in Carson and Higham's analysis, which takes the correction
    equation as solved by GMRES to a backward error of the order of the working
    precision: the correction's relative error is then about ``kappa(M) u``, below
    1/2 wherever GMRES-IR converges at all. A looser ``tau`` scaled to the reduction
    still needed (an earlier rule: ``tol / omega``, at most 1/2) leaves it an error of
    up to ``kappa(M) tau``, which near the solution's accuracy spoilt steps and forced
    fallbacks; ``u`` costs somewhat more Krylov iterations, which ``max_iter`` caps.

    Parameters
    ----------
    solve, product : callable
        ``v -> (LU)^-1 v`` and ``v -> A v`` for (n,) arrays of ``r``'s dtype.
    r : (n,) ndarray, float64 or complex128
        The residual ``b - A x``.
    max_iter : int
        Most Krylov iterations.
    options : mapping
        Product options of :func:`ozaki.gemm` (see :func:`gmres`).

    Returns
    -------
    d : (n,) ndarray
        The correction.
    iterations : int
        The Krylov iterations taken.
    """
    return gmres(lambda v: solve(product(v)), solve(r), TAU, max_iter, options)

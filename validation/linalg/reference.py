"""Exact residuals, the reference solution, and the metrics of a computed solution.

* :func:`exact_residual` - ``fl(b - A x)`` rounded once: every term ``a_ij x_j`` is
  split error-free (Dekker's TwoProduct, :func:`validation.reference.two_product`, no
  FMA) and ``math.fsum`` (correctly rounded) sums the ``2n + 1`` doubles of each row.
* :func:`rhs` - ``b = fl(A x0)``, the same sum without ``b``.
* :func:`reference_solution` - the solution of ``A x = b`` to about ``u`` relative:
  fixed-precision iterative refinement with exact residuals (Higham, *Accuracy and
  Stability of Numerical Algorithms*, 2nd ed., Thm 12.1 and Sec. 12.1.1): with the
  residual computed exactly and rounded once, and the corrections solved by LAPACK's
  LU (scipy), the forward error contracts by a factor of about ``kappa u`` times the
  growth per step down to ``u``, as long as that factor stays below one (it is at most
  ``1e14 u = 0.011`` times the growth here). The last correction estimates the
  reference's own error (:data:`REF_LIMIT` bounds it).
* :func:`metrics` - HPL's scaled residual, the normwise and componentwise backward
  errors, and the forward error against the reference.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

from ..reference import two_product

__all__ = ["EPS", "REF_LIMIT", "exact_residual", "rhs", "reference_solution", "metrics",
           "hpl_residual"]

#: HPL's machine epsilon (unit roundoff): ``2**-53``.
EPS = 2.0 ** -53
#: The reference's estimated error (its last correction, relative in the inf-norm) may
#: be at most this: a hundredth of the smallest forward error that matters (``u``).
REF_LIMIT = EPS / 100
MAX_STEPS = 20


def _check_split(A: np.ndarray, x: np.ndarray) -> None:
    """``ValueError`` unless every product ``a_ij x_j`` splits error-free.

    Dekker's TwoProduct is exact when the splitting ``(2**27 + 1) a`` does not
    overflow (``|a| <= 2**995``) and the exponents of ``a`` and ``x`` sum to at least
    ``e_min + 52 = -970`` (``|a x| >= 2**-969``, or a zero factor).
    """
    big = 2.0 ** 990
    if np.abs(A).max(initial=0) > big or np.abs(x).max(initial=0) > big:
        raise ValueError("entries beyond 2**990: the error-free split would overflow")
    P = np.abs(A * x[None, :])
    nz = (A != 0) & (x[None, :] != 0)
    if nz.any() and (P[nz].min() < 2.0 ** -900 or P[nz].max() > 2.0 ** 1000):
        raise ValueError("a product a_ij x_j outside [2**-900, 2**1000]: the error-free "
                         "split is not exact there")


def exact_residual(A: np.ndarray, x: np.ndarray, b: np.ndarray | None = None,
                   x_lo: np.ndarray | None = None) -> np.ndarray:
    """``fl(b - A (x + x_lo))``, every entry the exact value rounded once.

    Parameters
    ----------
    A : (n, n) ndarray of float64
    x : (n,) ndarray of float64
    b : (n,) ndarray of float64, optional
        Zero when omitted (so the result is ``fl(-A x)``).
    x_lo : (n,) ndarray of float64, optional
        The low part of a double-double ``x + x_lo`` (zero when omitted).

    Returns
    -------
    (n,) ndarray of float64

    Raises
    ------
    ValueError
        Where a product would not split error-free (:func:`_check_split`).
    """
    A = np.asarray(A, dtype=np.float64)
    parts = [np.asarray(x, dtype=np.float64)]
    if x_lo is not None:
        parts.append(np.asarray(x_lo, dtype=np.float64))
    rows = [[] for _ in range(A.shape[0])]
    for v in parts:
        _check_split(A, v)
        p, e = two_product(A, np.broadcast_to(v, A.shape))
        for i, row in enumerate(rows):
            row += (-p[i], -e[i])
    out = np.empty(A.shape[0])
    for i, row in enumerate(rows):
        out[i] = math.fsum(np.concatenate(row + ([] if b is None else [[b[i]]])))
    return out


def rhs(A: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """``b = fl(A x0)``, rounded once per entry (so ``|b - A x0| <= u |A x0|``)."""
    return -exact_residual(A, x0)


def _two_sum(a, b):
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


def reference_solution(A: np.ndarray, b: np.ndarray, x0: np.ndarray) -> dict:
    """The solution of ``A x = b`` as a double-double ``x + x_lo``, refined from ``x0``.

    Each step adds the correction ``d = U^-1 L^-1 P^T r`` (scipy's LU) of the exact
    residual ``r`` of ``x + x_lo`` (:func:`exact_residual`) in double-double (TwoSum),
    until ``||d||_inf <= REF_LIMIT / 16 ||x||_inf`` or :data:`MAX_STEPS`.

    Returns
    -------
    dict
        ``x``, ``x_lo`` (the reference ``x + x_lo``), ``steps`` (corrections applied),
        ``error`` (the last correction's inf-norm over ``||x||_inf``, computed after the
        last step: the reference's estimated relative error) and ``ok``
        (``error <= REF_LIMIT``).
    """
    lu = sla.lu_factor(A, check_finite=False)
    x = np.array(x0, dtype=np.float64)
    lo = np.zeros_like(x)
    steps, err = 0, math.inf
    for steps in range(MAX_STEPS + 1):
        d = sla.lu_solve(lu, exact_residual(A, x, b, lo), check_finite=False)
        norm = float(np.abs(x).max())
        err = float(np.abs(d).max()) / norm if norm else float(np.abs(d).max())
        if err <= REF_LIMIT / 16 or steps == MAX_STEPS:
            break
        s, t = _two_sum(x, d)
        x, lo = _two_sum(s, t + lo)
    return {"x": x, "x_lo": lo, "steps": steps, "error": err, "ok": err <= REF_LIMIT}


def hpl_residual(A, x, b, r) -> float:
    """HPL's check: ``||r||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n)``."""
    n = A.shape[0]
    den = EPS * (np.abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()) * n
    return float(np.abs(r).max() / den)


def metrics(A: np.ndarray, b: np.ndarray, x: np.ndarray, ref: dict) -> dict:
    """The measures of a computed solution ``x`` of ``A x = b``.

    Parameters
    ----------
    A : (n, n) ndarray, b : (n,) ndarray, x : (n,) ndarray
    ref : dict
        :func:`reference_solution`'s result (``x`` and ``x_lo``).

    Returns
    -------
    dict
        ``hpl``: HPL's scaled residual :func:`hpl_residual`, the residual rounded once
        from its exact value; ``backward``: the normwise backward error
        ``||r||_inf / (||A||_inf ||x||_inf + ||b||_inf)`` (Rigal and Gaches: the
        smallest ``e`` with ``(A + E) x = b + f``, ``||E|| <= e ||A||``,
        ``||f|| <= e ||b||``; so ``hpl = backward / (eps n)``); ``componentwise``:
        Oettli and Prager's ``max_i |r_i| / (|A||x| + |b|)_i``; ``forward``:
        ``||x - x_ref||_inf / ||x_ref||_inf`` against the double-double reference. All
        dimensionless; ``inf`` for a non-finite ``x``.
    """
    if not np.isfinite(x).all():
        return {"hpl": math.inf, "backward": math.inf, "componentwise": math.inf,
                "forward": math.inf}
    r = exact_residual(A, x, b)
    norm_a = float(np.abs(A).sum(axis=1).max())
    den = norm_a * float(np.abs(x).max()) + float(np.abs(b).max())
    absr = np.abs(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.abs(A) @ np.abs(x) + np.abs(b)
        cw = np.where(scale > 0, absr / scale, np.where(absr == 0, 0.0, math.inf))
    top = float(np.abs(ref["x"]).max())
    diff = float(np.abs((x - ref["x"]) - ref["x_lo"]).max())
    return {"hpl": hpl_residual(A, x, b, r),
            "backward": float(absr.max()) / den if den else 0.0,
            "componentwise": float(cw.max()),
            "forward": diff / top if top else diff}

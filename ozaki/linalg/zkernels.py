"""The O(n^2 nb) work on complex matrices: the kernels of :mod:`ozaki.linalg.kernels` for
complex128, each complex operation spelled out in real IEEE operations.

The arrays are complex128; every complex operation is written on the real and
imaginary parts, so that its roundings are those written here (not a compiler's
or a library's choice of formula):

* product ``a y``: ``(fl(fl(ar yr) - fl(ai yi)), fl(fl(ar yi) + fl(ai yr)))``, six
  roundings, no fused multiply-add (numba without ``fastmath`` never contracts).
  It is commutative bit for bit (``fl`` of a product or a sum is), so ``a y`` and
  ``y a`` give the same bits; an update ``x - a y`` rounds each part once more;
* quotient ``x / d``: Smith's algorithm, ``|dr| >= |di|``: ``r = di/dr``,
  ``t = dr + di r``, ``((xr + xi r)/t, (xi - xr r)/t)``; else ``r = dr/di``,
  ``t = di + dr r``, ``((xr r + xi)/t, (xi r - xr)/t)``. ``r`` and ``t`` depend on
  ``d`` only (computed once per pivot, the same bits wherever they are computed).
  No overflow for operands far from the overflow threshold, relative error a few
  ``u``; a zero ``d`` gives NaN (``0/0``), as an IEEE infinity would in the real case;
* pivot magnitude: LAPACK's ``cabs1(z) = |Re z| + |Im z|`` (one rounding), as
  ``izamax`` in ``zgetrf``, so the pivots are LAPACK's.

Each kernel follows its real counterpart step for step (the same work order, the
same argument that every entry receives its updates in the order of the steps), so
the bits depend only on the operands. ``tests/test_linalg_complex.py`` checks them
against a numpy formulation on separate real and imaginary arrays.
"""

from __future__ import annotations

import sys

import numba as nb
import numpy as np

__all__ = ["lu_panel", "cholesky_block", "unit_lower_solve", "lower_solve", "upper_solve",
           "first_zero"]

_jit = nb.njit(cache=True, nogil=True, error_model="numpy")
_inline = nb.njit(inline="always", nogil=True, error_model="numpy")

_SUB = 16  # columns per sub-panel of lu_panel, as the real kernel


@_inline
def _caxpy(x, a, y):
    """``x[c] <- x[c] - a * y[c]`` (1-D, the length of ``x``), parts spelled out."""
    ar = a.real
    ai = a.imag
    for c in range(x.shape[0]):
        yr = y[c].real
        yi = y[c].imag
        pr = ar * yr - ai * yi
        pi = ar * yi + ai * yr
        x[c] = complex(x[c].real - pr, x[c].imag - pi)


@_inline
def _smith(d):
    """Smith's parameters of the divisor ``d``: ``(real part dominates, r, t)``."""
    dr = d.real
    di = d.imag
    if abs(dr) >= abs(di):
        r = di / dr
        return True, r, dr + di * r
    r = dr / di
    return False, r, di + dr * r


@_inline
def _quotient(x, big, r, t):
    """``x / d`` from ``d``'s Smith parameters."""
    xr = x.real
    xi = x.imag
    if big:
        return complex((xr + xi * r) / t, (xi - xr * r) / t)
    return complex((xr * r + xi) / t, (xi * r - xr) / t)


@_jit
def _lu_panel(W, k, w, piv):
    # as kernels._lu_panel; pivot by cabs1, division by Smith's algorithm
    m, n = W.shape
    h = m - k
    P = np.empty((h, w), dtype=np.complex128)
    for i in range(h):
        for c in range(w):
            P[i, c] = W[k + i, k + c]
    zero = -1
    for j in range(w):
        if j % _SUB == 0:
            j0 = j
            e = min(j + _SUB, w)
        # pivot: the first index of the largest cabs1(P[i, j]), i >= j; a NaN wins at once
        p = j
        best = abs(P[j, j].real) + abs(P[j, j].imag)
        if best == best:
            for i in range(j + 1, h):
                v = abs(P[i, j].real) + abs(P[i, j].imag)
                if v != v:
                    p = i
                    break
                if v > best:
                    best = v
                    p = i
        piv[k + j] = k + p
        if P[p, j].real != 0 or P[p, j].imag != 0:
            if p != j:
                for c in range(w):
                    t = P[j, c]
                    P[j, c] = P[p, c]
                    P[p, c] = t
            big, r, t = _smith(P[j, j])
            for i in range(j + 1, h):
                P[i, j] = _quotient(P[i, j], big, r, t)
        elif zero < 0:
            zero = k + j
        if j + 1 < e:
            u = P[j, j + 1:e]
            for i in range(j + 1, h):
                _caxpy(P[i, j + 1:e], P[i, j], u)
        if j + 1 == e and e < w:
            for i in range(j0 + 1, h):
                x = P[i, e:]
                for s in range(j0, min(i, e)):
                    _caxpy(x, P[i, s], P[s, e:])
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
    """Factor columns ``k:k+w`` of the complex128 ``W`` (rows ``k:``) in place (``zgetf2``).

    As :func:`ozaki.linalg.kernels.lu_panel`, with the pivot of largest
    ``cabs1 = |Re| + |Im|`` (the first one; a NaN, the first one, wins), the column
    divided by the pivot with Smith's algorithm and the rank-1 update
    ``W[i, c] <- W[i, c] - W[i, j] W[j, c]`` in the parts written in the module's
    docstring. Returns the 0-based column of the first zero pivot, or -1.
    """
    return int(_lu_panel(W, k, w, piv))


@_jit
def _cholesky_block(D):
    n = D.shape[0]
    lc = np.empty(n, dtype=np.complex128)
    for j in range(n):
        d = D[j, j].real  # zpotrf: the imaginary part of the diagonal is not read
        if not d > 0:
            return j
        r = np.sqrt(d)
        D[j, j] = complex(r, 0.0)
        for i in range(j + 1, n):
            D[i, j] = complex(D[i, j].real / r, D[i, j].imag / r)
        for i in range(j + 1, n):
            lc[i] = complex(D[i, j].real, -D[i, j].imag)  # conj(l_i): exact
        for i in range(j + 1, n):
            _caxpy(D[i, j + 1:i + 1], D[i, j], lc[j + 1:i + 1])
    return -1


def cholesky_block(D: np.ndarray, offset: int) -> None:
    """Lower Cholesky factor ``D = L L^H`` of the Hermitian block ``D`` (lower triangle).

    Right-looking, column by column (``zpotf2``'s semantics): the pivot is the real
    part of the diagonal entry (its imaginary part is not read), the factor's
    diagonal is real (imaginary part +0), the column is divided by it part by part
    and ``D[i, c] <- D[i, c] - l_i conj(l_c)`` for ``c <= i``. Raises
    ``LinAlgError`` as LAPACK reports it when a pivot is not positive (NaN included).
    """
    j = int(_cholesky_block(D))
    if j >= 0:
        raise np.linalg.LinAlgError(
            f"{offset + j + 1}-th leading minor of the array is not positive definite")


@_jit
def _lower_solve(L, B, unit):
    # as kernels._lower_solve: each entry sees the steps in the order of i
    n = L.shape[0]
    q = B.shape[1]
    if B.strides[1] <= B.strides[0]:
        for i in range(n):
            bi = B[i]
            if not unit:
                big, r, t = _smith(L[i, i])
                for c in range(q):
                    bi[c] = _quotient(bi[c], big, r, t)
            for s in range(i + 1, n):
                _caxpy(B[s], L[s, i], bi)
    else:
        Lt = np.ascontiguousarray(L.T)
        for c in range(q):
            x = B[:, c]
            for i in range(n):
                if not unit:
                    big, r, t = _smith(L[i, i])
                    x[i] = _quotient(x[i], big, r, t)
                _caxpy(x[i + 1:], x[i], Lt[i, i + 1:])


@_jit
def _upper_solve(U, B, unit):
    n = U.shape[0]
    q = B.shape[1]
    if B.strides[1] <= B.strides[0]:
        for i in range(n - 1, -1, -1):
            bi = B[i]
            if not unit:
                big, r, t = _smith(U[i, i])
                for c in range(q):
                    bi[c] = _quotient(bi[c], big, r, t)
            for s in range(i):
                _caxpy(B[s], U[s, i], bi)
    else:
        Ut = np.ascontiguousarray(U.T)
        for c in range(q):
            x = B[:, c]
            for i in range(n - 1, -1, -1):
                if not unit:
                    big, r, t = _smith(U[i, i])
                    x[i] = _quotient(x[i], big, r, t)
                _caxpy(x[:i], x[i], Ut[i, :i])


def unit_lower_solve(L: np.ndarray, B: np.ndarray) -> None:
    """``B <- L^-1 B`` for the unit lower triangle of ``L`` (complex128, in place)."""
    _lower_solve(L, B, True)


def lower_solve(L: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- L^-1 B`` for the lower triangle of ``L`` (complex128, in place)."""
    _lower_solve(L, B, bool(unit))


def upper_solve(U: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- U^-1 B`` for the upper triangle of ``U`` (complex128, backward, in place)."""
    _upper_solve(U, B, bool(unit))


def first_zero(d: np.ndarray) -> int:
    """Index of the first exact zero of ``d`` (both parts zero), or -1."""
    z = np.flatnonzero(d == 0)
    return int(z[0]) if z.size else -1


def of(*arrays: np.ndarray):
    """The kernel module for these work arrays: this one when one is complex, else the real
    :mod:`ozaki.linalg.kernels`."""
    if any(x.dtype.kind == "c" for x in arrays):
        return sys.modules[__name__]
    from . import kernels
    return kernels

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

Each kernel follows its real counterpart step for step (the same work order, up to
how many steps or columns one pass takes, and the same argument that every entry
receives its updates in the order of the steps), so the bits depend only on the
operands. :func:`lu_panel` and the triangular solves hold the real and imaginary
parts in separate buffers (exact copies), so that the parts' arithmetic above runs
on contiguous real vectors. ``tests/test_linalg_complex.py`` checks the kernels
against a numpy formulation on separate real and imaginary arrays.
"""

from __future__ import annotations

import sys

import numba as nb
import numpy as np

from ..backends.cpu import parallel
from .kernels import check_panel, column_major

__all__ = ["lu_panel", "cholesky_block", "unit_lower_solve", "lower_solve", "upper_solve",
           "first_zero"]

_jit = nb.njit(cache=True, nogil=True, error_model="numpy")
_inline = nb.njit(inline="always", nogil=True, error_model="numpy")

_SUB = 16    # columns per group of lu_panel, as the real kernel
_ROWS = 256  # rows per tile of lu_panel's deferred updates
_COLS = 32   # columns of B per block of the triangular solves
_PARALLEL_WORK = 1 << 20  # n^2 q below which a solve runs on the calling thread only


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


@_inline
def _sub2(xr, xi, ar, ai, yr, yi):
    """``x - a y`` on planar parts (1-D, the length of ``xr``), as in the module's docstring.

    ``lu_panel`` passes the pivot row's entry as ``a`` and the multipliers as ``y``:
    ``u l`` has the bits of ``l u`` (the product commutes bit for bit)."""
    for c in range(xr.shape[0]):
        xr[c] = xr[c] - (ar * yr[c] - ai * yi[c])
        xi[c] = xi[c] - (ar * yi[c] + ai * yr[c])


@_jit
def _steps(Pr, Pi, r0, r1, c0, c1, t0, t1):
    # as kernels._steps on planar parts: rows r0..r1-1 (r0 >= t1) of columns c0..c1-1 get
    # the updates of steps t0..t1-1, in order, two columns at a time
    n = r1 - r0
    c = c0
    while c < c1:
        g = 2 if c + 2 <= c1 else 1
        for t in range(t0, t1):
            lr = Pr[r0:r1, t]
            li = Pi[r0:r1, t]
            if g == 2:
                xr, xi, zr, zi = Pr[r0:r1, c], Pi[r0:r1, c], Pr[r0:r1, c + 1], Pi[r0:r1, c + 1]
                ar, ai, br, bi = Pr[t, c], Pi[t, c], Pr[t, c + 1], Pi[t, c + 1]
                for i in range(n):
                    mr, mi = lr[i], li[i]
                    xr[i] = xr[i] - (mr * ar - mi * ai)
                    xi[i] = xi[i] - (mr * ai + mi * ar)
                    zr[i] = zr[i] - (mr * br - mi * bi)
                    zi[i] = zi[i] - (mr * bi + mi * br)
            else:
                _sub2(Pr[r0:r1, c], Pi[r0:r1, c], Pr[t, c], Pi[t, c], lr, li)
        c += g


@_jit
def _lu_panel(W, k, w, piv):
    # as kernels._lu_panel (the same work order) on planar parts; pivot by cabs1,
    # division by Smith's algorithm
    m, n = W.shape
    h = m - k
    Pr = column_major(h, w)
    Pi = column_major(h, w)
    for i0 in range(0, h, 8):
        for c in range(w):
            for i in range(i0, min(i0 + 8, h)):
                Pr[i, c] = W[k + i, k + c].real
                Pi[i, c] = W[k + i, k + c].imag
    zero = -1
    for j0 in range(0, w, _SUB):
        e = min(j0 + _SUB, w)
        for t0 in range(0, j0, 4):
            t1 = min(t0 + 4, j0)
            for c in range(j0, e):
                for t in range(t0, t1 - 1):
                    _sub2(Pr[t + 1:t1, c], Pi[t + 1:t1, c], Pr[t, c], Pi[t, c],
                          Pr[t + 1:t1, t], Pi[t + 1:t1, t])
            _steps(Pr, Pi, t1, j0, j0, e, t0, t1)
        for i0 in range(j0, h, _ROWS):
            _steps(Pr, Pi, i0, min(i0 + _ROWS, h), j0, e, 0, j0)
        for j in range(j0, e):
            for t in range(j0, j - 1):
                _sub2(Pr[t + 1:j, j], Pi[t + 1:j, j], Pr[t, j], Pi[t, j],
                      Pr[t + 1:j, t], Pi[t + 1:j, t])
            _steps(Pr, Pi, j, h, j, j + 1, j0, j)
            # pivot: the first index of the largest cabs1 = |Re| + |Im| (one rounding),
            # a NaN, the first one, winning at once
            p = j
            best = abs(Pr[j, j]) + abs(Pi[j, j])
            if best == best:
                for i in range(j + 1, h):
                    v = abs(Pr[i, j]) + abs(Pi[i, j])
                    if v != v:
                        p = i
                        break
                    if v > best:
                        best = v
                        p = i
            piv[k + j] = k + p
            if Pr[p, j] != 0 or Pi[p, j] != 0:
                if p != j:
                    for c in range(w):
                        Pr[j, c], Pr[p, c] = Pr[p, c], Pr[j, c]
                        Pi[j, c], Pi[p, c] = Pi[p, c], Pi[j, c]
                big, r, t = _smith(complex(Pr[j, j], Pi[j, j]))
                for i in range(j + 1, h):
                    q = _quotient(complex(Pr[i, j], Pi[i, j]), big, r, t)
                    Pr[i, j] = q.real
                    Pi[i, j] = q.imag
            elif zero < 0:
                zero = k + j
    for i0 in range(0, h, 32):
        for c0 in range(0, w, 32):
            for i in range(i0, min(i0 + 32, h)):
                for c in range(c0, min(c0 + 32, w)):
                    W[k + i, k + c] = complex(Pr[i, c], Pi[i, c])
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
    docstring. Returns the 0-based column of the first zero pivot, or -1. Requires
    ``k + w <= min(W.shape)`` and ``len(piv) >= k + w``.

    The work order is the real kernel's, on the real and imaginary parts held in two
    column-major buffers (exact copies), so is the argument that every entry gets the
    same updates in the order of the steps.
    """
    check_panel(W, k, w, piv)
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


@_inline
def _finish(xr, xi, d, unit):
    if not unit:
        big, r, t = _smith(d)
        for c in range(xr.shape[0]):
            q = _quotient(complex(xr[c], xi[c]), big, r, t)
            xr[c] = q.real
            xi[c] = q.imag


@_jit
def _forward(L, Xr, Xi, unit):
    # as kernels._forward on planar parts (X = Xr + i Xi): row r gets the updates of the
    # rows i < r in increasing i, then its division; rows in pairs sharing the loads
    n, m = Xr.shape
    for r in range(0, n - 1, 2):
        xr, xi, zr, zi = Xr[r], Xi[r], Xr[r + 1], Xi[r + 1]
        for s in range(r):
            yr, yi = Xr[s], Xi[s]
            ar, ai = L[r, s].real, L[r, s].imag
            br, bi = L[r + 1, s].real, L[r + 1, s].imag
            for c in range(m):
                vr, vi = yr[c], yi[c]
                xr[c] = xr[c] - (ar * vr - ai * vi)
                xi[c] = xi[c] - (ar * vi + ai * vr)
                zr[c] = zr[c] - (br * vr - bi * vi)
                zi[c] = zi[c] - (br * vi + bi * vr)
        _finish(xr, xi, L[r, r], unit)
        _sub2(zr, zi, L[r + 1, r].real, L[r + 1, r].imag, xr, xi)
        _finish(zr, zi, L[r + 1, r + 1], unit)
    if n % 2:
        r = n - 1
        for s in range(r):
            _sub2(Xr[r], Xi[r], L[r, s].real, L[r, s].imag, Xr[s], Xi[s])
        _finish(Xr[r], Xi[r], L[r, r], unit)


@_jit
def _forward_blocks(b0, b1, L, B, unit):
    # blocks of _COLS columns of B, each split (exactly) into real and imaginary planes
    n, q = B.shape
    buf = np.empty((2, n * _COLS))
    for b in range(b0, b1):
        c0 = b * _COLS
        m = min(_COLS, q - c0)
        Xr = buf[0, :n * m].reshape((n, m))
        Xi = buf[1, :n * m].reshape((n, m))
        for i in range(n):
            for c in range(m):
                Xr[i, c] = B[i, c0 + c].real
                Xi[i, c] = B[i, c0 + c].imag
        _forward(L, Xr, Xi, unit)
        for i in range(n):
            for c in range(m):
                B[i, c0 + c] = complex(Xr[i, c], Xi[i, c])


def _solve(L: np.ndarray, B: np.ndarray, unit: bool) -> None:
    n, q = B.shape
    if n == 0 or q == 0:
        return
    parallel.run(_forward_blocks, -(-q // _COLS), L, B, unit,
                 max_threads=None if n * n * q >= _PARALLEL_WORK else 1)


def unit_lower_solve(L: np.ndarray, B: np.ndarray) -> None:
    """``B <- L^-1 B`` for the unit lower triangle of ``L`` (complex128, in place)."""
    _solve(L, B, True)


def lower_solve(L: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- L^-1 B`` for the lower triangle of ``L`` (complex128, in place)."""
    _solve(L, B, bool(unit))


def upper_solve(U: np.ndarray, B: np.ndarray, unit: bool) -> None:
    """``B <- U^-1 B`` for the upper triangle of ``U`` (complex128, backward, in place: the
    forward substitution on the reversed rows and columns, as the real kernel)."""
    _solve(U[::-1, ::-1], B[::-1], bool(unit))


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

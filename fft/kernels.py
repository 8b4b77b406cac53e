"""The compiled pass of a stage: twiddle multiplication fused with the stage's transpose."""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["twiddle_transpose", "transpose"]

@nb.njit(nogil=True, cache=True)
def _twiddle_transpose(Y, Tr, Ti, Z):  # pragma: no cover - compiled
    two, r, M, c = Y.shape
    B = max(1, 4096 // (r * c))  # a block of Z's rows stays in cache while k1 sweeps it
    for b0 in range(0, M, B):
        for k1 in range(r):
            for n2 in range(b0, min(b0 + B, M)):
                tr, ti = Tr[k1, n2], Ti[k1, n2]
                for w in range(c):
                    yr, yi = Y[0, k1, n2, w], Y[1, k1, n2, w]
                    Z[0, n2, k1, w] = yr * tr - yi * ti
                    Z[1, n2, k1, w] = yr * ti + yi * tr


def twiddle_transpose(Y: np.ndarray, Tr: np.ndarray, Ti: np.ndarray) -> np.ndarray:
    """``Z[:, n2, k1, w] = (Y[:, k1, n2, w] * T[k1, n2])``, complex products of split parts.

    Parameters
    ----------
    Y : ndarray, shape (2, r, M, c), float64, C order
        A stage's product, split (real parts, imaginary parts).
    Tr, Ti : ndarray, shape (r, M), float64
        The twiddles' real and imaginary parts.

    Returns
    -------
    ndarray, shape (2, M, r, c)
        Each part rounded once after its two products, as numpy's complex
        multiplication rounds (``yr tr - yi ti``, ``yr ti + yi tr``; no fused
        multiply-add), serially and without the GIL: the same bits on every
        thread count.
    """
    Z = np.empty((2, Y.shape[2], Y.shape[1], Y.shape[3]))
    _twiddle_transpose(np.ascontiguousarray(Y), Tr, Ti, Z)
    return Z


@nb.njit(nogil=True, cache=True)
def _transpose(X, Y):  # pragma: no cover - compiled
    P, R, C = X.shape
    T = 32  # a T x T tile of each stays in cache (and in the TLB) while it is copied
    for p in range(P):
        for r0 in range(0, R, T):
            r1 = min(r0 + T, R)
            for c0 in range(0, C, T):
                for c in range(c0, min(c0 + T, C)):
                    for r in range(r0, r1):
                        Y[p, c, r] = X[p, r, c]


def transpose(X: np.ndarray) -> np.ndarray:
    """``X.transpose(0, 2, 1)`` as a new C-ordered array, copied tile by tile.

    Parameters
    ----------
    X : ndarray, shape (P, R, C), float64

    Returns
    -------
    ndarray, shape (P, C, R)
        The same values (a copy: no arithmetic). numpy's strided copy of a large
        transpose walks one side a whole stride per element and runs 5-10x slower.
    """
    Y = np.empty((X.shape[0], X.shape[2], X.shape[1]))
    _transpose(np.ascontiguousarray(X), Y)
    return Y

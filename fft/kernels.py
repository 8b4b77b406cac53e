"""The compiled passes of a stage: twiddle multiplication fused with the stage's
transpose, and the tiled transposes that move an axis.

Each pass is a serial numba kernel that releases the GIL and works on a range of its
output's rows; :func:`split_run` runs the ranges of a large pass on the calling thread
and on threads of its own (as many as :func:`ozaki.get_workers` allows the calling
thread, made per call: no state shared between calls or across ``fork``). Every output
value is written by one range, from the same inputs by the same operations, so the
bits do not depend on the number of threads.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

import ozaki

__all__ = ["twiddle_transpose", "transpose", "split_run", "SPLIT_BELOW"]

#: Passes over fewer values than this run on the calling thread alone (starting a
#: thread costs about what a pass over this many values does).
SPLIT_BELOW = 1 << 18


def split_run(kernel, rows: int, size: int, *args, threads: int | None = None) -> None:
    """``kernel(lo, hi, *args)`` over the row ranges of ``[0, rows)``, one per thread.

    ``size`` is the number of values the pass moves: below :data:`SPLIT_BELOW`, or
    with one thread allowed (``threads``, default :func:`ozaki.get_workers`), the
    whole range runs on the calling thread. Otherwise the calling thread runs the
    first range and each further range runs on a thread started for this call; all
    have finished (and the first error is raised) when this returns.
    """
    parts = min(rows, ozaki.get_workers() if threads is None else threads)
    if parts <= 1 or size < SPLIT_BELOW:
        kernel(0, rows, *args)
        return
    edges = [rows * i // parts for i in range(parts + 1)]
    with ThreadPoolExecutor(parts - 1) as pool:
        futures = [pool.submit(kernel, edges[i], edges[i + 1], *args) for i in range(1, parts)]
        try:
            kernel(edges[0], edges[1], *args)
        finally:
            for fut in futures:
                fut.exception()  # every range has finished before an error propagates
    for fut in futures:
        fut.result()


@nb.njit(nogil=True, cache=True)
def _twiddle_transpose(lo, hi, Y, Tr, Ti, Z):  # pragma: no cover - compiled
    """Rows ``n2`` in ``[lo, hi)`` of :func:`twiddle_transpose`'s ``Z``."""
    two, r, M, c = Y.shape
    B = max(1, 4096 // (r * c))  # a block of Z's rows stays in cache while k1 sweeps it
    for b0 in range(lo, hi, B):
        for k1 in range(r):
            for n2 in range(b0, min(b0 + B, hi)):
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
        Each part rounded once after its two products (``yr tr - yi ti``,
        ``yr ti + yi tr``; no fused multiply-add: numpy's own complex multiplication
        may fuse, numpy 2.4 on AVX-512 rounds about a quarter of the parts
        differently), without the GIL, in ranges of ``n2`` on the pass threads
        (:func:`split_run`): the same bits on every thread count.
    """
    Z = np.empty((2, Y.shape[2], Y.shape[1], Y.shape[3]))
    split_run(_twiddle_transpose, Y.shape[2], Y.size, np.ascontiguousarray(Y), Tr, Ti, Z)
    return Z


@nb.njit(nogil=True, cache=True)
def _transpose(lo, hi, X, Y):  # pragma: no cover - compiled
    """Tiles of rows ``lo:hi`` of ``X`` (flattened over its ``P`` matrices, in whole
    tiles: a range starts on a tile's first row) of :func:`transpose`."""
    P, R, C = X.shape
    T = 32  # a T x T tile of each stays in cache (and in the TLB) while it is copied
    tiles = (R + T - 1) // T
    for task in range(lo, hi):
        p = task // tiles
        r0 = (task - p * tiles) * T
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
        The same values (a copy: no arithmetic), in bands of 32 rows on the pass
        threads (:func:`split_run`). numpy's strided copy of a large transpose walks
        one side a whole stride per element and runs 5-10x slower.
    """
    Y = np.empty((X.shape[0], X.shape[2], X.shape[1]))
    tasks = X.shape[0] * ((X.shape[1] + 31) // 32)  # tiles of 32 rows (:func:`_transpose`)
    split_run(_transpose, tasks, X.size, np.ascontiguousarray(X), Y)
    return Y

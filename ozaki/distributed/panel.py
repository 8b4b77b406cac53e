"""The LU panel over a process column: partial pivoting with the serial kernel's bits.

A panel (a block column, rows ``k:``) is held by one process column, its rows dealt
over the ``P`` ranks. Step ``j`` of its factorisation:

1. **pivot**: each rank finds, among its rows at positions ``>= k + j``, the first of
   largest magnitude in column ``j`` (magnitudes compared by their sign-cleared bits,
   a NaN above every number, as the serial kernel's ``_pivot``); one all-gather over
   the column brings every rank each candidate ``(magnitude bits, global row, the row)``
   and the row at position ``k + j``; the pivot is the largest magnitude, the smallest
   global row among equals: the serial kernel's choice (the first index holding the
   maximum, or the first NaN);
2. **interchange**: unless the pivot is exactly zero, the pivot row and row ``k + j``
   trade places (their owners overwrite them from what the all-gather brought);
3. **elimination**: each rank divides its rows below ``k + j`` in column ``j`` by the
   pivot (not when it is zero, as the serial kernel skips it) and applies the rank-1
   update ``x <- fl(x - fl(l u_c))`` to the panel's later columns.

Why the bits are the serial kernel's (:func:`ozaki.linalg.kernels.lu_panel`): that
kernel's docstring shows its bits are those of the step-by-step formulation, in which
each row gets, at step ``t``, ``fl(x - fl(l_t u_t))`` in each later column while not
yet a pivot row, in increasing ``t``, the pivot chosen on the column after its earlier
steps; this is that formulation, the rows spread over ranks (each row's values move
with it). With one process row the panel is factored by the serial kernel itself.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..linalg import kernels
from .traffic import Traffic

__all__ = ["factor_panel"]

_jit = nb.njit(cache=True, nogil=True, error_model="numpy")
_ABS = 0x7FFFFFFFFFFFFFFF  # the bits of a double but its sign
_INF = 0x7FF0000000000000  # the bits of +inf


@_jit
def _candidate(bits, a, j):
    """``(magnitude, row)``: the first of rows ``a..`` of ``bits`` (a panel's int64 view)
    with the largest magnitude in column ``j`` (every NaN counted as one value above
    ``inf``), or ``(-1, -1)`` without rows."""
    top, at = -1, -1
    for i in range(a, bits.shape[0]):
        v = bits[i, j] & _ABS
        if v > _INF:
            v = _INF + 1
        if v > top:
            top, at = v, i
    return top, at


@_jit
def _eliminate(P, a, j, u, divide):
    """Rows ``a..`` of ``P``: column ``j`` divided by ``u[j]`` (if ``divide``), then
    ``P[i, c] <- P[i, c] - P[i, j] * u[c]`` for the columns ``c > j`` (two roundings)."""
    d = u[j]
    for i in range(a, P.shape[0]):
        x = P[i]
        l = x[j] / d if divide else x[j]
        x[j] = l
        for c in range(j + 1, P.shape[1]):
            x[c] = x[c] - l * u[c]


def factor_panel(P: np.ndarray, rows: np.ndarray, k: int, comm, tr: Traffic
                 ) -> tuple[np.ndarray, int]:
    """Factor the panel whose rows ``rows`` (global, increasing, all ``>= k``) this rank
    holds in ``P`` (C order, (len(rows), w)), in place, collectively over ``comm`` (the
    process column, ranks in the order of the process rows).

    Returns ``(piv, zero)``: the global pivot rows of the steps ``k..k+w-1`` (int64, the
    same on every rank) and the first step whose pivot is exactly zero, or -1.
    """
    w = P.shape[1]
    if comm.Get_size() == 1:  # every row here: the serial kernel, rows at k..
        piv = np.zeros(w, np.int32)
        zero = kernels.lu_panel(P, 0, w, piv)
        return piv.astype(np.int64) + k, (zero + k if zero >= 0 else -1)
    bits = P.view(np.int64)
    piv = np.empty(w, np.int64)
    zero = -1
    # per rank: (magnitude, global row, holds position g), its candidate row, row g
    send = np.zeros(3 + 2 * w, np.int64)
    recv = np.empty((comm.Get_size(), 3 + 2 * w), np.int64)
    none = np.iinfo(np.int64).max
    for j in range(w):
        g = k + j  # the position whose pivot is chosen
        a = int(np.searchsorted(rows, g))  # this rank's rows at positions >= g
        top, at = _candidate(bits, a, j)
        mine = a < len(rows) and rows[a] == g
        send[:3] = top, rows[at] if at >= 0 else -1, mine
        send[3:3 + w] = bits[at] if at >= 0 else 0
        send[3 + w:] = bits[a] if mine else 0
        comm.Allgather(send, recv)
        tr.add("pivots", send.nbytes * (comm.Get_size() - 1), comm.Get_size() - 1)
        # the largest magnitude, then the smallest global row
        win = min(range(len(recv)), key=lambda r: (-recv[r, 0], recv[r, 1] if recv[r, 1] >= 0
                                                    else none))
        p = piv[j] = recv[win, 1]
        u = recv[win, 3:3 + w].view(np.float64).copy()
        nonzero = bool(u[j] != 0)
        if nonzero and p != g:  # row g goes where the pivot row was
            old = recv[int(np.argmax(recv[:, 2])), 3 + w:].view(np.float64)
            if mine:
                P[a] = u
            i = int(np.searchsorted(rows, p))
            if i < len(rows) and rows[i] == p:
                P[i] = old
        elif not nonzero and zero < 0:
            zero = g
        _eliminate(P, a + 1 if mine else a, j, u, nonzero)
    return piv, zero

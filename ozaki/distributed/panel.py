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
   update ``x <- fl(x - fl(l u_c))`` to the later columns of the group of ``GROUP``
   columns being factored; the columns right of the group get the group's steps
   afterwards, in one pass (as the serial kernel defers them).

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
GROUP = 16  # columns per group of steps (the rest of the panel gets them afterwards)
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
def _eliminate(P, a, j, u, divide, stop):
    """Rows ``a..`` of ``P``: column ``j`` divided by ``u[j]`` (if ``divide``), then
    ``P[i, c] <- P[i, c] - P[i, j] * u[c]`` for the columns ``j < c < stop`` (two
    roundings)."""
    d = u[j]
    for i in range(a, P.shape[0]):
        x = P[i]
        l = x[j] / d if divide else x[j]
        x[j] = l
        for c in range(j + 1, stop):
            x[c] = x[c] - l * u[c]


@_jit
def _deferred(P, a, j0, U):
    """Rows ``a..`` of ``P``, columns ``j1 = j0 + len(U)..``: the steps ``j0..j1-1`` in
    order, ``P[i, c] <- P[i, c] - P[i, t] * U[t - j0, c]`` (two roundings each; four
    steps per pass, ``x - l0 u0 - l1 u1 - ...`` evaluated left to right: the same
    roundings in the same order as four passes)."""
    j1, w = j0 + U.shape[0], P.shape[1]
    for i in range(a, P.shape[0]):
        x = P[i]
        t = j0
        while t + 4 <= j1:
            l0, l1, l2, l3 = x[t], x[t + 1], x[t + 2], x[t + 3]
            u0, u1, u2, u3 = U[t - j0], U[t - j0 + 1], U[t - j0 + 2], U[t - j0 + 3]
            for c in range(j1, w):
                x[c] = (((x[c] - l0 * u0[c]) - l1 * u1[c]) - l2 * u2[c]) - l3 * u3[c]
            t += 4
        for s in range(t, j1):
            l, u = x[s], U[s - j0]
            for c in range(j1, w):
                x[c] = x[c] - l * u[c]


def factor_panel(P: np.ndarray, rows: np.ndarray, k: int, comm, tr: Traffic, *,
                 group: int = GROUP, kernel: bool = True) -> tuple[np.ndarray, int]:
    """Factor the panel whose rows ``rows`` (global, increasing, all ``>= k``) this rank
    holds in ``P`` (C order, (len(rows), w)), in place, collectively over ``comm`` (the
    process column, ranks in the order of the process rows).

    ``group`` columns are factored at a time, the rest of the panel receiving their
    steps afterwards, as the module docstring says; ``kernel``: a single process column uses the
    serial kernel (with ``False``, the steps here, to check one against the other).
    Returns ``(piv, zero)``: the global pivot rows of the steps ``k..k+w-1`` (int64, the
    same on every rank) and the first step whose pivot is exactly zero, or -1.
    """
    w = P.shape[1]
    if comm.Get_size() == 1 and kernel:  # every row here: the serial kernel, rows at k..
        piv = np.zeros(w, np.int32)
        zero = kernels.lu_panel(P, 0, w, piv)
        return piv.astype(np.int64) + k, (zero + k if zero >= 0 else -1)
    piv = np.empty(w, np.int64)
    zero = -1
    for j0 in range(0, w, group):
        zero = _steps(P, rows, k, j0, min(j0 + group, w), comm, tr, piv, zero)
    return piv, zero


def _steps(P, rows, k, j0, j1, comm, tr, piv, zero) -> int:
    """The steps ``j0..j1-1``: right-looking on the group's columns, then the deferred
    columns ``j1..``.

    Why the deferral changes no bit: a row's entry in a column ``c >= j1`` gets the
    steps ``j0..j1-1`` after the group, in order, as it would have got them one by one
    (its multipliers of the group are final once their steps are done, and the pivot
    rows' entries ``u_t[c]`` are read once they got their own steps ``j0..t-1``); a
    row's values move with it in an interchange (whole rows, deferred columns
    included), and the pivot search reads only the group's columns, which are up to
    date. The pivot rows of the group get their deferred steps from the copies the
    all-gathers brought: every rank computes the same numbers, their owners keep them.
    """
    w = P.shape[1]
    bits = P.view(np.int64)
    # per rank: (magnitude, global row, holds position g), its candidate row, row g
    send = np.zeros(3 + 2 * w, np.int64)
    recv = np.empty((comm.Get_size(), 3 + 2 * w), np.int64)
    none = np.iinfo(np.int64).max
    U = np.empty((j1 - j0, w))  # the group's pivot rows, as chosen
    held = []  # (step, local row) of the pivot rows this rank keeps
    for j in range(j0, j1):
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
        u = U[j - j0]
        u[...] = recv[win, 3:3 + w].view(np.float64)
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
        if mine:
            held.append((j, a))
        _eliminate(P, a + 1 if mine else a, j, u, nonzero, j1)
    if j1 < w:
        for i in range(1, j1 - j0):  # the pivot rows' own deferred steps, in order
            for t in range(i):
                U[i, j1:] = U[i, j1:] - U[i, j0 + t] * U[t, j1:]
        for j, a in held:
            P[a, j1:] = U[j - j0, j1:]
        _deferred(P, int(np.searchsorted(rows, k + j1)), j0, U)
    return zero

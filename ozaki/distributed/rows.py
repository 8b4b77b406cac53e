"""Row interchanges of a block-cyclic matrix across its process rows.

The interchanges ``i <-> piv[i]`` of a set of steps are composed on a list of global
row indices first (integers, as :func:`ozaki.linalg.lu`'s ``_swaps``), which gives for
each moved row ``r`` the row ``src[r]`` whose values end there; then one all-to-all over
the process column moves each such row from the owner of ``src[r]`` to the owner of
``r``. No arithmetic: the rows land where the step-by-step interchanges put them.
"""

from __future__ import annotations

import numpy as np

from .cyclic import owner
from .traffic import Traffic, alltoallv

__all__ = ["composed", "move_rows"]


def composed(piv: np.ndarray, first: int, reverse: bool = False) -> dict[int, int]:
    """``{r: src}``: after the interchanges ``first + i <-> piv[i]`` (in order, or in
    reverse order), row ``r`` holds what row ``src`` held; only rows that move."""
    rows: dict[int, int] = {}
    steps = range(len(piv) - 1, -1, -1) if reverse else range(len(piv))
    for i in steps:
        a, b = first + i, int(piv[i])
        if a != b:
            rows[a], rows[b] = rows.get(b, b), rows.get(a, a)
    return {r: s for r, s in rows.items() if r != s}


def move_rows(comm, X: np.ndarray, moves: dict[int, int], nb: int,
              cols: tuple[slice, ...], tr: Traffic) -> None:
    """``X[r] <- X[src]`` for each ``r: src`` of ``moves`` (global rows), on the columns
    ``cols`` (slices) of this rank's rows ``X`` (its process row's rows of the
    block-cyclic layout), collective over ``comm`` (the process column: rank ``p``
    holds process row ``p``'s rows)."""
    P, me = comm.Get_size(), comm.Get_rank()
    out_rows = [[] for _ in range(P)]   # our rows to send to each rank, in row order
    in_rows = [[] for _ in range(P)]    # where the rows from each rank go
    keep = []                           # (to, from) between our own rows
    for r in sorted(moves):
        (to, lt), (fr, lf) = owner(r, nb, P), owner(moves[r], nb, P)
        if fr == me and to == me:
            keep.append((lt, lf))
        elif fr == me:
            out_rows[to].append(lf)
        elif to == me:
            in_rows[fr].append(lt)
    width = [len(range(X.shape[1])[c]) for c in cols]
    send_idx = [i for d in range(P) for i in out_rows[d]]
    send = np.concatenate([X[send_idx, c] for c in cols], axis=1) if cols else \
        np.empty((len(send_idx), 0), X.dtype)
    if keep:
        to, fr = (list(x) for x in zip(*keep))
        for c in cols:
            X[to, c] = X[fr, c]
    if P == 1:
        return
    ncols = sum(width)
    recv = np.empty((sum(len(x) for x in in_rows), ncols), X.dtype)
    alltoallv(comm, np.ascontiguousarray(send).reshape(-1),
              [len(x) * ncols for x in out_rows], recv.reshape(-1),
              [len(x) * ncols for x in in_rows], tr, "interchanges")
    dest = [i for f in range(P) for i in in_rows[f]]
    if dest:
        edges = np.cumsum([0] + width)
        for c, a, b in zip(cols, edges[:-1], edges[1:]):
            X[dest, c] = recv[:, a:b]

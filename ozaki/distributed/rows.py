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


def move_rows(comm, X: np.ndarray, rows: np.ndarray, moves: dict[int, int], nb: int,
              cols, tr: Traffic) -> None:
    """``X[r] <- X[src]`` for each ``r: src`` of ``moves`` (global rows), on the columns
    ``cols`` (an index or slice) of this rank's rows ``X`` (global ``rows``), collective
    over ``comm`` (the process column: rank ``p`` holds process row ``p``'s rows)."""
    P, me = comm.Get_size(), comm.Get_rank()
    local = {int(r): i for i, r in enumerate(rows)} if moves else {}
    cols = np.arange(X.shape[1])[cols]
    ncols = len(cols)
    order = sorted(moves)
    out_rows = [[] for _ in range(P)]   # our rows to send to each rank, in ``order``
    in_rows = [[] for _ in range(P)]    # where the rows from each rank go
    keep = []                           # (to, from) between our own rows
    for r in order:
        s = moves[r]
        to, fr = owner(r, nb, P)[0], owner(s, nb, P)[0]
        if fr == me and to == me:
            keep.append((local[r], local[s]))
        elif fr == me:
            out_rows[to].append(local[s])
        elif to == me:
            in_rows[fr].append(local[r])
    send_idx = [i for d in range(P) for i in out_rows[d]]
    send = np.ascontiguousarray(X[np.ix_(send_idx, cols)])
    if keep:
        to, fr = (list(x) for x in zip(*keep))
        X[np.ix_(to, cols)] = X[np.ix_(fr, cols)]
    if P == 1:
        return
    recv = np.empty((sum(len(x) for x in in_rows), ncols), X.dtype)
    alltoallv(comm, send.reshape(-1), [len(x) * ncols for x in out_rows], recv.reshape(-1),
              [len(x) * ncols for x in in_rows], tr, "interchanges")
    dest = [i for f in range(P) for i in in_rows[f]]
    if dest:
        X[np.ix_(dest, cols)] = recv


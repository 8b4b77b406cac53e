"""Transposes: ``Alltoallv`` exchanges that make another axis local.

A layout ``split = (a, b)`` (:mod:`fft.distributed.layout`) has axis ``c`` local. To
make ``a`` local, the ranks of each process *column* (the ``P`` ranks that share
``q``) exchange: each cuts its whole axis ``c`` into ``P`` even blocks and sends
block ``j`` to the column's rank ``j``, which joins what it receives along ``a``;
the layout becomes ``(c, b)``. Making ``b`` local is the same along the process
*row*, giving ``(a, c)``. An exchange over one rank (a slab's trivial cut) only
relabels the layout. The values are moved, never combined: a transpose cannot change
a bit.

Each exchange packs what it sends into one buffer and unpacks what it receives (one
copy each way); its traffic is counted (:func:`ozaki.distributed.traffic.alltoallv`).
"""

from __future__ import annotations

import time

import numpy as np

from ozaki.distributed.layout import bounds
from ozaki.distributed.traffic import Traffic, alltoallv

from .layout import DistributedArray, check_split

__all__ = ["exchange", "make_local", "redistribute", "route"]


def _take(axis: int, lo: int, hi: int) -> tuple:
    """The index of entries ``[lo, hi)`` along ``axis``."""
    return (slice(None),) * axis + (slice(int(lo), int(hi)),)


def exchange(comm, S: np.ndarray, joined: int, cut: int, n_joined: int,
             traffic: Traffic | None = None, seconds: dict | None = None) -> np.ndarray:
    """Join array axis ``joined`` (cut over ``comm``: this rank holds block ``rank`` of
    its ``n_joined`` entries) and cut array axis ``cut`` (whole here) over ``comm``.

    Returns the new block (C order). ``seconds`` gains ``"packing"`` (the copies) and
    ``"transposes"`` (the ``Alltoallv``, waiting included).
    """
    s, r = comm.Get_size(), comm.Get_rank()
    if s == 1:
        return S
    t0 = time.perf_counter()
    edges_c = bounds(S.shape[cut], s)
    edges_j = bounds(n_joined, s)
    sent_shapes, recv_shapes = [], []
    for j in range(s):
        sh = list(S.shape)
        sh[cut] = int(edges_c[j + 1] - edges_c[j])
        sent_shapes.append(tuple(sh))
        sh = list(S.shape)
        sh[joined] = int(edges_j[j + 1] - edges_j[j])
        sh[cut] = int(edges_c[r + 1] - edges_c[r])
        recv_shapes.append(tuple(sh))
    send_counts = [int(np.prod(sh, dtype=np.int64)) for sh in sent_shapes]
    recv_counts = [int(np.prod(sh, dtype=np.int64)) for sh in recv_shapes]
    send = np.empty(sum(send_counts), S.dtype)
    at = 0
    for j in range(s):
        send[at:at + send_counts[j]].reshape(sent_shapes[j])[...] = \
            S[_take(cut, edges_c[j], edges_c[j + 1])]
        at += send_counts[j]
    recv = np.empty(sum(recv_counts), S.dtype)
    t1 = time.perf_counter()
    alltoallv(comm, send, send_counts, recv, recv_counts, traffic)
    t2 = time.perf_counter()
    shape = list(S.shape)
    shape[joined] = int(n_joined)
    shape[cut] = int(edges_c[r + 1] - edges_c[r])
    out = np.empty(shape, S.dtype)
    at = 0
    for j in range(s):
        out[_take(joined, edges_j[j], edges_j[j + 1])] = \
            recv[at:at + recv_counts[j]].reshape(recv_shapes[j])
        at += recv_counts[j]
    if seconds is not None:
        seconds["packing"] = seconds.get("packing", 0.0) + (t1 - t0) + (
            time.perf_counter() - t2)
        seconds["transposes"] = seconds.get("transposes", 0.0) + (t2 - t1)
    return out


def make_local(S: np.ndarray, lead: int, shape, split, grid, axis: int,
               traffic: Traffic | None = None, seconds: dict | None = None):
    """Make data axis ``axis`` local (one exchange, or none if it is).

    ``S`` is the block with ``lead`` leading non-data axes (1 for a split complex
    array ``(2, ...)``, 0 for a real one); ``shape`` the global data shape. Returns
    ``(S, split)``.
    """
    a, b = split
    c = 3 - a - b
    if axis == c:
        return S, split
    if axis == a:  # along the process column
        S = exchange(grid.col, S, lead + a, lead + c, shape[a], traffic, seconds)
        return S, (c, b)
    S = exchange(grid.row, S, lead + b, lead + c, shape[b], traffic, seconds)
    return S, (a, c)


def route(start: tuple[int, int], goal: tuple[int, int]) -> list[int]:
    """The shortest sequence of axes to make local to go from layout ``start`` to
    ``goal`` (at most three exchanges: the six layouts form a cycle of moves)."""
    paths = {tuple(start): []}
    frontier = [tuple(start)]
    while tuple(goal) not in paths:
        nxt = []
        for a, b in frontier:
            c = 3 - a - b
            for axis, lay in ((a, (c, b)), (b, (a, c))):
                if lay not in paths:
                    paths[lay] = paths[(a, b)] + [axis]
                    nxt.append(lay)
        frontier = nxt
    return paths[tuple(goal)]


def redistribute(D: DistributedArray, split, traffic: Traffic | None = None
                 ) -> DistributedArray:
    """``D`` in the layout ``split`` (a new array; ``D`` is not modified).

    At most three exchanges (:func:`route`); the values are moved, not changed.
    Collective over ``D.grid``: every rank must pass the same ``split``.
    """
    from ozaki.distributed.layout import agree

    def check():
        if not isinstance(D, DistributedArray):
            raise TypeError("D must be a DistributedArray (see fft.distributed.scatter)")
        D.validate()
        return D.shape, D.split, check_split(split), (D.grid.P, D.grid.Q)

    if not isinstance(D, DistributedArray):  # no communicator to agree on
        raise TypeError("D must be a DistributedArray (see fft.distributed.scatter)")
    shape, here, goal, _ = agree(D.grid.comm, check)
    S = D.local
    for axis in route(here, goal):
        S, here = make_local(S, 0, shape, here, D.grid, axis, traffic)
    return DistributedArray(np.ascontiguousarray(S) if S is not D.local else S.copy(), shape,
                            D.grid, here)

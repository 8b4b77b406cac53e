"""Collectives that count what this rank sends: bytes and messages, exactly.

The count is the logical point-to-point traffic of *flat* collectives, the
convention of the alpha-beta network model (:mod:`tme_model`): a broadcast's root
sends its buffer to each of the other ``s - 1`` ranks (``s - 1`` messages), the
others send nothing; in an all-reduce or an all-gather every rank sends its
contribution to each of the other ``s - 1`` ranks; in an all-to-all each rank sends
each of the others its own block (``s - 1`` messages, what it keeps not counted). MPI's own algorithms (trees,
rings) move the same payload in other patterns; what is counted here is what the
algorithm asks for, the same on every MPI library.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np

__all__ = ["Traffic", "bcast", "allreduce", "allgather", "allgather_blocks", "gather_blocks",
           "alltoallv"]


@dataclass
class Traffic:
    """Bytes and messages this rank sent, per kind of collective."""

    bytes: int = 0
    messages: int = 0
    by_kind: dict | None = None

    def add(self, kind: str, nbytes: int, messages: int) -> None:
        self.bytes += int(nbytes)
        self.messages += int(messages)
        if self.by_kind is None:
            self.by_kind = {}
        b, m = self.by_kind.get(kind, (0, 0))
        self.by_kind[kind] = (b + int(nbytes), m + int(messages))


def bcast(comm, buf: np.ndarray, root: int, traffic: Traffic | None, kind: str = "panels"):
    """``comm.Bcast(buf, root)``, counted at the root."""
    comm.Bcast(buf, root=root)
    if traffic is not None and comm.Get_rank() == root:
        s = comm.Get_size() - 1
        traffic.add(kind, s * buf.nbytes, s)


def allreduce(comm, buf: np.ndarray, op, traffic: Traffic | None, kind: str = "decisions"):
    """In-place ``comm.Allreduce``, counted on every rank."""
    from mpi4py import MPI
    comm.Allreduce(MPI.IN_PLACE, buf, op=op)
    if traffic is not None:
        s = comm.Get_size() - 1
        traffic.add(kind, s * buf.nbytes, s)


def alltoallv(comm, send: np.ndarray, send_counts, recv: np.ndarray, recv_counts,
              traffic: Traffic | None, kind: str = "transposes") -> None:
    """``comm.Alltoallv``: rank ``j`` gets ``send``'s ``send_counts[j]`` elements after the
    first ``sum(send_counts[:j])``; ``recv`` takes what each rank sends this one, in rank
    order. Counted on every rank: the elements it sends the other ``s - 1`` ranks, in
    ``s - 1`` messages (flat convention, empty ones included)."""
    sc = np.asarray(send_counts, np.int64)
    rc = np.asarray(recv_counts, np.int64)
    sd = np.concatenate([[0], np.cumsum(sc)[:-1]])
    rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
    comm.Alltoallv([send, (sc, sd)], [recv, (rc, rd)])
    if traffic is not None:
        s, me = comm.Get_size(), comm.Get_rank()
        traffic.add(kind, (int(sc.sum()) - int(sc[me])) * send.itemsize, s - 1)


def _payload(obj) -> int:
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (list, tuple)) and all(isinstance(x, np.ndarray) for x in obj):
        return sum(x.nbytes for x in obj)
    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def allgather(comm, obj, traffic: Traffic | None, kind: str = "decisions"):
    """``comm.allgather(obj)`` (small objects, pickled), counted as their payload's bytes
    (the arrays' bytes, or the pickle's) on every rank."""
    got = comm.allgather(obj)
    if traffic is not None:
        s = comm.Get_size() - 1
        traffic.add(kind, s * _payload(obj), s)
    return got


def _blocks(comm, local: np.ndarray, root):
    """The ranks' blocks (buffers, no pickle: any size), on ``root`` or, for ``None``, all."""
    local = np.ascontiguousarray(local)
    shapes = comm.allgather(local.shape)
    counts = [int(np.prod(sh, dtype=np.int64)) for sh in shapes]
    recv = (np.empty(sum(counts), local.dtype) if root is None or comm.Get_rank() == root
            else None)
    if root is None:
        comm.Allgatherv(local.reshape(-1), [recv, counts])
    else:
        comm.Gatherv(local.reshape(-1), [recv, counts] if recv is not None else None,
                     root=root)
    if recv is None:
        return None
    edges = np.cumsum([0] + counts)
    return [recv[a:b].reshape(sh) for a, b, sh in zip(edges[:-1], edges[1:], shapes)]


def allgather_blocks(comm, local: np.ndarray, axis: int, traffic: Traffic | None,
                     kind: str = "fallback") -> np.ndarray:
    """Every rank's block of ``comm`` joined along ``axis`` (in rank order), on every rank."""
    got = np.concatenate(_blocks(comm, local, None), axis=axis)
    if traffic is not None:
        s = comm.Get_size() - 1
        traffic.add(kind, s * local.nbytes, s)
    return got


def gather_blocks(comm, local: np.ndarray, root):
    """The ranks' blocks as a list in rank order, on ``root`` (``None`` elsewhere) or, for
    ``root=None``, on every rank."""
    return _blocks(comm, local, root)

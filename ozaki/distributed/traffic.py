"""Collectives that count what this rank sends: bytes and messages, exactly.

The count is the logical point-to-point traffic of *flat* collectives, the
convention of the alpha-beta network model (:mod:`tme_model`): a broadcast's root
sends its buffer to each of the other ``s - 1`` ranks (``s - 1`` messages), the
others send nothing; in an all-reduce or an all-gather every rank sends its
contribution to each of the other ``s - 1`` ranks. MPI's own algorithms (trees,
rings) move the same payload in other patterns; what is counted here is what the
algorithm asks for, the same on every MPI library.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import numpy as np

__all__ = ["Traffic", "bcast", "allreduce", "allgather"]


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


def allgather(comm, obj, traffic: Traffic | None, kind: str = "decisions"):
    """``comm.allgather(obj)`` (pickled), counted as the pickle's bytes on every rank."""
    got = comm.allgather(obj)
    if traffic is not None:
        s = comm.Get_size() - 1
        traffic.add(kind, s * len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)), s)
    return got

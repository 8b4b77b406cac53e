"""Native FP64 SUMMA over the same layout and k-panels as :func:`~ozaki.distributed.dgemm`.

The baseline of the distributed benchmarks and the counter-example of the docs: for
each k-panel (:func:`~ozaki.distributed.panels`), the owners broadcast the
FP64 panels of ``A`` along the process row and of ``B`` along the process column (the
same bytes and messages as the emulated SUMMA's panel traffic), and each rank adds the
product of what it received to its block of ``C`` in floating point.  The order of the
floating-point additions depends on the panels, hence on the grid and the panel width:
unlike the emulated product, the bits of ``C`` change with them (as those of
ScaLAPACK's ``PDGEMM`` do).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.kind import REAL
from .emulated import check_operands
from .layout import DistributedMatrix
from .modular import broadcast_panels, owners
from .traffic import Traffic

__all__ = ["SummaInfo", "summa"]


@dataclass
class SummaInfo:
    """What one :func:`summa` call did on this rank.

    Attributes
    ----------
    seconds : dict
        This rank's wall time: ``"gemms"`` (the local FP64 products and their sums)
        and ``"communication"`` (the panel broadcasts, waiting included).
    traffic : Traffic
        Bytes and messages this rank sent (kind ``"panels"``), counted by
        :mod:`~ozaki.distributed.traffic`.
    panels : int
        Number of k-panels.
    """

    seconds: dict = field(default_factory=lambda: {"gemms": 0.0, "communication": 0.0})
    traffic: Traffic = field(default_factory=Traffic)
    panels: int = 0


def summa(A: DistributedMatrix, B: DistributedMatrix, *, panel: int = 512,
          return_info: bool = False):
    """``C = A @ B`` over the grid in native FP64 arithmetic (SUMMA).

    Parameters
    ----------
    A : DistributedMatrix, global shape (M, K)
    B : DistributedMatrix, global shape (K, N), on the same grid
    panel : int
        Largest k-panel width (the panels of :func:`~ozaki.distributed.dgemm`).
    return_info : bool
        Also return a :class:`SummaInfo`.

    Returns
    -------
    C : DistributedMatrix, global shape (M, N)
        Within the usual FP64 bound ``|C - AB| <= gamma_K |A||B|``, but its bits depend
        on the grid and ``panel``.
    info : SummaInfo
        Only with ``return_info``.

    Raises
    ------
    TypeError, ValueError
        As :func:`~ozaki.distributed.dgemm`, with the same message on every rank.
    """
    MPI = __import__("mpi4py.MPI", fromlist=["MPI"])
    options = dict(scheme="auto", num_moduli="auto", mode="accurate", engine="auto",
                   fallback=None, bounds=False, panel=panel, backend=None)
    # (only panel is the caller's)
    grid, (M, K, N), _ = check_operands(A, B, options, REAL, MPI)
    (m0, m1), (n0, n1) = A.rows, B.cols
    m, n = m1 - m0, n1 - n0
    info = SummaInfo()
    out = np.zeros((m, n))
    cuts = list(owners(grid, K, int(panel))) if K else []
    info.panels = len(cuts)
    sec = info.seconds
    for k0, k1, qa, a0, pb, b0 in cuts:
        t0 = time.perf_counter()
        pa, pbk = broadcast_panels(A, B, k0, k1, qa, a0, pb, b0, info.traffic)
        t1 = time.perf_counter()
        sec["communication"] += t1 - t0
        if m and n:
            out += pa @ pbk
        sec["gemms"] += time.perf_counter() - t1
    C = DistributedMatrix(out, (M, N), grid)
    return (C, info) if return_info else C

"""Accurate-mode decisions of a block-distributed product (componentwise certificate).

The serial decision (:func:`ozaki.decisions.decide_accurate`) runs on this rank's block
with a :class:`GridReduce`, which combines what it reads across the grid:

=======================  ==========================================  ================
quantity                 read as                                     reduced over
=======================  ==========================================  ================
line data, exponents     ``Lines`` (MAX bits, OR non-finite, SUM nz)  k (row / column)
floor sums ``rF, cF``    exact FP64 integer sums                     k (row / column)
floor GEMM ``G``         SUMMA of the floor panels (exact integers)  k (the panels)
``U`` row maxima ``mu``  MAX over a row's columns                    process row
scaled column maxima     MAX over a column's rows                    process column
failures, max ratio      exact SUM, MAX                              whole grid
refined rows / columns   OR, then counted once                       row / column
=======================  ==========================================  ================

Every one is exact or a MAX/OR, so each rank decides what the whole product decides
(counts, shifts of its rows and columns, whether and where to refine) and certifies its
block as the serial call certifies those entries. The refinement's exact GEMMs read the
failing rows of ``A`` and columns of ``B`` in full, gathered along the process row and
column by every rank (the decision to refine is the same everywhere).
"""

from __future__ import annotations

import numpy as np

from .. import decisions, scaling
from ..backend import Operand
from ..certify import Whole
from ..moduli import auto_num_moduli
from .layout import bounds
from .traffic import allgather, allreduce, bcast

__all__ = ["GridReduce", "decide_accurate"]


class GridReduce(Whole):
    """:class:`ozaki.certify.Whole`'s reductions over a process grid."""

    def __init__(self, grid, shape, traffic):
        from mpi4py import MPI
        self.grid, self.shape, self.tr, self.MPI = grid, shape, traffic, MPI

    def _reduce(self, comm, x, op, dtype=None):
        buf = np.array(x, dtype=dtype or np.asarray(x).dtype, copy=True, ndmin=1)
        allreduce(comm, buf, op, self.tr)
        return buf if np.ndim(x) else buf[0].item()

    def row_max(self, x):
        return self._reduce(self.grid.row, x, self.MPI.MAX)

    def col_max(self, x):
        return self._reduce(self.grid.col, x, self.MPI.MAX)

    def row_any(self, x):
        return self._reduce(self.grid.row, np.asarray(x, np.uint8), self.MPI.MAX).astype(bool)

    def col_any(self, x):
        return self._reduce(self.grid.col, np.asarray(x, np.uint8), self.MPI.MAX).astype(bool)

    def max(self, x):
        return self._reduce(self.grid.comm, x, self.MPI.MAX, np.float64)

    def sum(self, x):
        return self._reduce(self.grid.comm, x, self.MPI.SUM, np.int64)

    def count_rows(self, c):  # the ranks of a process row hold the same row flags
        return int(self._reduce(self.grid.col, c, self.MPI.SUM, np.int64))

    def count_cols(self, c):
        return int(self._reduce(self.grid.row, c, self.MPI.SUM, np.int64))

    def lines(self, m, n):
        return self.shape


def _floor_gemm(A, B, FA, FB, engine, r, width, tr):
    """``G = F_A F_B`` of this rank's block: SUMMA over the floor panels (float32, exact)."""
    from .emulated import panels
    grid = A.grid
    (m0, m1), (n0, n1) = A.rows, B.cols
    m, n, k = m1 - m0, n1 - n0, A.shape[1]
    akb, bkb = bounds(k, grid.Q), bounds(k, grid.P)
    G = np.zeros((1, m, n))
    q = 2 ** r - 1
    for k0, k1 in panels(k, grid.P, grid.Q, width):
        qa = int(np.searchsorted(akb, k0, side="right") - 1)
        pb = int(np.searchsorted(bkb, k0, side="right") - 1)
        pa = (np.ascontiguousarray(FA[:, k0 - akb[qa]:k1 - akb[qa]]) if grid.q == qa
              else np.empty((m, k1 - k0), np.float32))
        bcast(grid.row, pa, qa, tr, "decisions")
        pbk = (np.ascontiguousarray(FB[k0 - bkb[pb]:k1 - bkb[pb]]) if grid.p == pb
               else np.empty((k1 - k0, n), np.float32))
        bcast(grid.col, pbk, pb, tr, "decisions")
        if m and n:  # integers below 2**53 in all: every partial sum is exact
            G[0] += engine.matmul(pa, pbk, q, q)
    return G


def decide_accurate(A, B, la, lb, opts, width, tr):
    """The whole product's accurate-mode decision, for this rank's block."""
    from mpi4py import MPI
    grid, backend = A.grid, opts.backend
    K = A.shape[1]
    r = scaling.quantization_bits(opts.scheme, K)
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    e = scaling.accurate_quantizers(Ea, za, r)
    f = scaling.accurate_quantizers(Eb, zb, r)
    oa = Operand(np.ascontiguousarray(A.local)[None], 0)
    ob = Operand(np.ascontiguousarray(B.local)[None], 1)
    FA = backend.quantize(oa, e, np.empty(oa.layout(1), np.float32))
    FB = backend.quantize(ob, f, np.empty(ob.layout(1), np.float32))
    rF = FA.sum(axis=2, dtype=np.float64)  # exact: integers below 2**53
    cF = FB.sum(axis=1, dtype=np.float64)
    allreduce(grid.row, rF, MPI.SUM, tr)
    allreduce(grid.col, cF, MPI.SUM, tr)
    G = _floor_gemm(A, B, np.ascontiguousarray(FA[0]), np.ascontiguousarray(FB[0]),
                    opts.engine, r, width, tr)
    reduce = GridReduce(grid, (A.shape[0], B.shape[1]), tr)
    gathered = {}

    def operands(g):  # collective: every rank refines (the decision is the whole's)
        if not gathered:
            gathered["A"] = np.concatenate(allgather(grid.row, A.local, tr, "decisions"), axis=1)
            gathered["B"] = np.concatenate(allgather(grid.col, B.local, tr, "decisions"), axis=0)
        return gathered["A"], gathered["B"]

    start = auto_num_moduli(opts.scheme, K)
    return decisions.decide_accurate(backend, decisions.Bound(r, G, rF, cF), e, f, la, lb, 1,
                                     opts.scheme, K, opts.num_moduli, opts.policy,
                                     opts.want_bound, operands, start, reduce=reduce)

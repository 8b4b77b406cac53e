"""Accurate-mode decisions of a block-distributed product (componentwise certificate).

The serial decision (:func:`ozaki.core.decisions.decide_accurate`) runs on this rank's block
with a :class:`GridReduce`, which combines what it reads across the grid:

=======================  ================================================  ===============
quantity                 read as                                           reduced over
=======================  ================================================  ===============
line data, exponents     ``Lines``: MAX bits, OR non-finite, SUM nonzeros  k (row, column)
floor sums ``rF, cF``    exact FP64 integer sums                           k (row, column)
floor GEMM ``G``         SUMMA of the floor panels (exact integers)        k (the panels)
``U`` row maxima ``mu``  MAX over a row's columns                          process row
scaled column maxima     MAX over a column's rows                          process column
failures, max ratio      exact SUM, MAX                                    whole grid
refined rows, columns    OR, then counted once                             row, column
=======================  ================================================  ===============

Every one is exact or a MAX/OR, so each rank decides what the whole product decides
(counts, shifts of its rows and columns, whether and where to refine) and certifies its
block as the serial call certifies those entries. The refinement's exact GEMMs read the
failing rows of ``A`` and columns of ``B`` in full, gathered along the process row and
column by every rank (the decision to refine is the same everywhere).
"""

from __future__ import annotations

import numpy as np

from ..core import decisions, scaling
from ..core.certify import Whole
from ..core.moduli import auto_num_moduli
from .modular import embedded, owners
from .traffic import allgather_blocks, allreduce, bcast

__all__ = ["GridReduce", "decide_accurate", "real_operands"]


class GridReduce(Whole):
    """:class:`ozaki.core.certify.Whole`'s reductions over a process grid."""

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


def _floor_gemm(A, B, FA, FB, engine, r, width, kind, tr):
    """``G = F_A F_B`` of this rank's block: SUMMA over the floor panels (float32, exact).

    Complex: ``F_A`` holds ``[FAr | FAi]`` and ``F_B`` the floors of ``[Br; Bi]``; a
    panel of the complex ``k`` is the same columns of both halves of ``F_A`` and the
    same rows of both halves of ``F_B``. The embedding's floor GEMM is then
    ``[FA FB | FA' FB]`` with ``FA' = [FAi | FAr]`` (its floors
    ``[[FBr, FBi], [FBi, FBr]]`` are never formed), as
    :func:`ozaki.core.decisions.bound_data` computes it.
    """
    grid = A.grid
    m, n, k = FA.shape[0], FB.shape[1], A.shape[1]
    ka, kb = A.local.shape[1], B.local.shape[0]  # local k of A's and B's blocks
    G = np.zeros((1, m, kind.width * n))
    q = 2 ** r - 1
    for k0, k1, qa, a0, pb, b0 in owners(grid, k, width):
        w = k1 - k0
        cols = np.r_[a0:a0 + w, ka + a0:ka + a0 + w] if kind.complex else np.s_[a0:a0 + w]
        rows = np.r_[b0:b0 + w, kb + b0:kb + b0 + w] if kind.complex else np.s_[b0:b0 + w]
        ext = kind.width * w
        pa = (np.ascontiguousarray(FA[:, cols]) if grid.q == qa
              else np.empty((m, ext), np.float32))
        bcast(grid.row, pa, qa, tr, "decisions")
        pbk = (np.ascontiguousarray(FB[rows]) if grid.p == pb
               else np.empty((ext, n), np.float32))
        bcast(grid.col, pbk, pb, tr, "decisions")
        if not (m and n):
            continue
        # integers below 2**53 in all: every partial sum is exact
        G[0, :, :n] += engine.matmul(pa, pbk, q, q)
        if kind.complex:
            swapped = np.concatenate((pa[:, w:], pa[:, :w]), axis=1)
            G[0, :, n:] += engine.matmul(swapped, pbk, q, q)
    return G


def decide_accurate(A, B, oa, ob, la, lb, opts, width, kind, tr):
    """The whole product's accurate-mode decision, for this rank's block.

    ``oa``, ``ob``: this rank's (embedded) blocks as operands; ``la``, ``lb``: the line
    data of their rows and columns, reduced along k. For a complex product the decision is that of the real embedding
    (its ``[Re | Im]`` columns tied, as :func:`ozaki.zgemm` ties them).
    """
    from mpi4py import MPI
    grid, backend = A.grid, opts.backend
    K = A.shape[1] * (kind.width)
    r = scaling.quantization_bits(opts.scheme, K)
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    e = scaling.accurate_quantizers(Ea, za, r)
    f = scaling.accurate_quantizers(Eb, zb, r)
    FA = backend.quantize(oa, e, np.empty(oa.layout(1), np.float32))
    FB = backend.quantize(ob, f, np.empty(ob.layout(1), np.float32))
    rF = FA.sum(axis=2, dtype=np.float64)  # exact: integers below 2**53
    cF = FB.sum(axis=1, dtype=np.float64)
    allreduce(grid.row, rF, MPI.SUM, tr)
    allreduce(grid.col, cF, MPI.SUM, tr)
    if kind.complex:  # the embedding's column data: both column halves sum FBr and FBi
        lb = decisions.Lines(*(kind.tile(x) for x in (lb.maxbits, lb.bad, lb.nnz)))
        f, cF = kind.tile(f), kind.tile(cF)
    G = _floor_gemm(A, B, np.ascontiguousarray(FA[0]), np.ascontiguousarray(FB[0]),
                    opts.engine, r, width, kind, tr)
    reduce = GridReduce(grid, (A.shape[0], B.shape[1] * (kind.width)), tr)
    gathered = {}

    def operands(g):  # collective: every rank refines (the decision is the whole's)
        if not gathered:
            Ar = allgather_blocks(grid.row, A.local, 1, tr, "decisions")
            Bc = allgather_blocks(grid.col, B.local, 0, tr, "decisions")
            gathered["AB"] = real_operands(Ar, Bc)
        return gathered["AB"]

    start = auto_num_moduli(opts.scheme, K)
    return decisions.decide_accurate(opts, decisions.Bound(r, G, rF, cF), e, f, la, lb, 1, K,
                                     operands, start, tie=kind.tie,
                                     reduce=reduce)


def real_operands(Ar: np.ndarray, Bc: np.ndarray):
    """Full rows of ``A`` and columns of ``B`` as the serial call's real matrices
    (complex: ``[Ar, Ai]`` and ``[[Br, Bi], [-Bi, Br]]``, as
    :func:`ozaki.core.pipeline.slice_operands` has them)."""
    if not np.iscomplexobj(Ar):
        return Ar, Bc
    Br, Bi = Bc.real, Bc.imag
    return embedded(Ar, 0), np.block([[Br, Bi], [-Bi, Br]])

"""Products whose every rank holds its operands whole along ``k``: the factorisations' updates.

In a distributed factorisation's update ``C - L U`` (``L`` a block column of ``nb``
columns, ``U`` a block row), each rank receives the whole rows of ``L`` for its rows of
``C`` and the whole columns of ``U`` for its columns: its block of ``L U`` needs no sum
over ranks, unlike :func:`ozaki.distributed.dgemm`'s SUMMA. What must still be the
whole product's is step 1, which serial ``ozaki.gemm`` takes over every entry at once:

* the **line data** of a row (a column) is the rank's own: it holds the whole line;
* **fast mode**: the per-line data of every row and column, O(m + n), is gathered in
  the lines' global order and every rank runs the serial decision on it
  (:func:`ozaki.distributed.fast.decide_fast`);
* **accurate mode**: the floor GEMM of a block is local (whole ``k``); the serial
  decision runs on the block with :class:`~ozaki.distributed.accurate.GridReduce`, whose
  MAX, OR and exact SUM reductions give every rank the whole product's counts, shifts
  and refinement choices; the refinement's exact GEMMs read the rank's own lines;
* the **small-product path** (compensated dot products, per entry) needs only its
  counts summed; the machine's **wider scheme** is taken when the whole product asks.

So each rank's block, reconstructed with the whole decision
(:func:`ozaki.core.pipeline.emulate`), holds the bits serial ``ozaki.gemm`` gives those
entries; the fallback and overflow guard are per entry on the rank's own lines.

``blocks`` names the ranks to combine over: an object with ``row`` (the ranks holding
the other columns of this rank's rows), ``col`` (the other rows of its columns) and
``comm`` (every rank holding a distinct block; ranks that repeat a block, as the process
columns of a replicated right-hand side, each combine their own copy): a
:class:`~ozaki.distributed.Grid`, or :class:`Blocks`.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..api.calls import compensated_product, empty_product
from ..core import compensated, decisions, scaling
from ..core.certify import CertificationError
from ..core.info import OzakiInfo
from ..core.kind import Kind
from ..core.moduli import auto_num_moduli
from ..core.operands import FloorRequest, Prepared
from ..core.pipeline import Options, emulate, slice_operands, widened
from ..api.prepared import embed
from .accurate import GridReduce
from .fast import decide_fast
from .traffic import Traffic, allreduce

__all__ = ["Blocks", "product"]


class Blocks(NamedTuple):
    """The communicators a distributed product's blocks are combined over (module docstring)."""

    row: object
    col: object
    comm: object


def product(A: np.ndarray, B: np.ndarray, rows: np.ndarray, cols: np.ndarray,
            shape: tuple[int, int, int], blocks, opts: Options, kind: Kind,
            tr: Traffic) -> tuple[np.ndarray, OzakiInfo]:
    """This rank's block ``A @ B`` of a product of global ``shape = (M, N, K)``.

    ``A`` (m, K) holds the whole rows ``rows`` (global indices, increasing) of the left
    operand, ``B`` (K, n) the whole columns ``cols`` of the right one (float64, or
    complex128 for a complex ``kind``). Collective over ``blocks``: every rank calls it
    for the same product, with its own block (possibly empty). Returns the block
    (m, n), with the bits of serial ``ozaki.gemm`` at those entries, and the info (counts
    and certificate of the whole, fallback and exact entries as totals).
    """
    from mpi4py import MPI
    M, N, K = shape
    m, n = A.shape[0], B.shape[1]
    if M == 0 or N == 0 or K == 0:
        X, info = empty_product(opts, 1, m, n, K, kind)
        return X[0], info
    if compensated.applies(opts, False, M, N, K, kind):
        return _compensated(A, B, rows, cols, shape, blocks, opts, kind, tr, MPI)
    backend = opts.backend
    dtype = np.complex128 if kind.complex else np.float64
    out = np.empty((1, m, n), dtype)
    with backend.sized(kind.width * max(m * K, K * n, m * n, 1)):
        t0 = time.perf_counter()
        pa, pb = _side(A, 0, opts, kind), _side(B, 1, opts, kind)
        dec = _decide(pa, pb, rows, cols, M, N, opts, kind, blocks, tr, MPI)
        wide = widened(opts, dec)  # dec.uncertified is the whole product's
        if wide is not None:
            opts = wide
            pa, pb = _side(A, 0, opts, kind), _side(B, 1, opts, kind)
            dec = _decide(pa, pb, rows, cols, M, N, opts, kind, blocks, tr, MPI)
        lines = time.perf_counter() - t0
        info = emulate(pa, pb, opts, out, kind=kind, decision=dec)
    info.seconds["scaling"] += lines
    counts = np.array([info.fallback_entries, info.exact_entries], np.int64)
    allreduce(blocks.comm, counts, MPI.SUM, tr)
    info.fallback_entries, info.exact_entries = int(counts[0]), int(counts[1])
    if info.fallback == "exact" and dec.mask is not None:
        info.fallback_block = _rows_cols(dec.mask[0], blocks, tr, MPI)
    return out[0], info


def _side(X: np.ndarray, outer: int, opts: Options, kind: Kind) -> Prepared:
    """The operand with its line data (and the floors, or norm sums, of its mode)."""
    backend = opts.backend
    X = X[None]
    op = backend.operand(embed(X.astype(np.complex128, copy=False), outer) if kind.complex
                         else X, outer)
    floors = None
    if opts.mode == "accurate":
        floors = FloorRequest(scaling.quantization_bits(opts.scheme, op.inner),
                              np.empty(op.layout(1), np.float32))
    return Prepared(op, backend, norms=opts.mode == "fast", floors=floors)


def _decide(pa: Prepared, pb: Prepared, rows, cols, M: int, N: int, opts: Options,
            kind: Kind, blocks, tr, MPI) -> decisions.Decision:
    """The whole product's step 1, for this rank's block (:mod:`ozaki.core.pipeline`'s
    ``decide`` with the reductions of the module docstring)."""
    backend = opts.backend
    k = pa.op.shape[2]  # the real embedding's inner dimension for a complex product
    la, lb = pa.lines, pb.lines
    if opts.mode == "fast":
        return decide_fast(blocks, la, pa.norm_sums(k), lb, pb.norm_sums(k), k, opts, MPI,
                           rows, cols, kind, tr)
    if kind.complex:
        lb = decisions.Lines(*(kind.tile(x) for x in (lb.maxbits, lb.bad, lb.nnz)))
    r = scaling.quantization_bits(opts.scheme, k)
    bd, e, f, _ = decisions.bound_data(backend, opts.engine, pa.op, pb.op, la, lb,
                                       opts.scheme, k, (pa.floors.get(r), pb.floors.get(r)),
                                       kind=kind)
    reduce = GridReduce(blocks, (M, kind.width * N), tr)
    return decisions.decide_accurate(opts, bd, e, f, la, lb, 1, k,
                                     lambda g: slice_operands(pa, pb, g, kind),
                                     auto_num_moduli(opts.scheme, k), tie=kind.tie,
                                     reduce=reduce)


def _rows_cols(mask: np.ndarray, blocks, tr, MPI) -> tuple[int, int]:
    """``(rows, columns)`` of the whole product holding an entry of the ranks' ``mask``
    blocks (a complex product's on its real embedding, as serial)."""
    r = mask.any(axis=1).astype(np.uint8)
    c = mask.any(axis=0).astype(np.uint8)
    allreduce(blocks.row, r, MPI.MAX, tr)  # a row's entries span the ranks of ``row``
    allreduce(blocks.col, c, MPI.MAX, tr)
    counts = np.array([int(r.sum()), int(c.sum())], np.int64)
    allreduce(blocks.col, counts[:1], MPI.SUM, tr)  # rows: once per rank of ``col``
    allreduce(blocks.row, counts[1:], MPI.SUM, tr)
    return int(counts[0]), int(counts[1])


def _compensated(A, B, rows, cols, shape, blocks, opts, kind, tr, MPI):
    """The small-product path on the block: each entry depends on its row and column
    alone; the counts are totals, and ``fallback="raise"`` names the whole product's
    first uncertified entry (row-major, on the real embedding) on every rank."""
    M, N, K = shape
    m, n = A.shape[0], B.shape[1]
    if kind.complex:
        A, B = (X.astype(np.complex128, copy=False) for X in (A, B))
    out, info, where = compensated_product(A[None], B[None], opts, kind, 1, m, n, K)
    width = kind.width * N
    first = M * width
    if where is not None and where.any():
        i, j = (int(x) for x in np.argwhere(where[0])[0])
        col = cols[j] if j < n else N + cols[j - n]
        first = int(rows[i]) * width + int(col)
    counts = np.array([info.exact_entries, info.uncertified], np.int64)
    allreduce(blocks.comm, counts, MPI.SUM, tr)
    info.exact_entries, info.uncertified = int(counts[0]), int(counts[1])
    if info.uncertified:
        top = np.array([-first], np.int64)
        allreduce(blocks.comm, top, MPI.MAX, tr)
        info.max_bound_ratio = np.inf
        if opts.policy == "raise":  # on every rank, after the same reductions
            raise CertificationError(compensated.explain(info.uncertified,
                                                         divmod(int(-top[0]), width)))
        if opts.policy == "exact":  # every rank reports the whole's fallback
            info.fallback, info.fallback_entries = "exact", info.uncertified
            local = where[0] if where is not None else np.zeros((m, kind.width * n), bool)
            info.fallback_block = _rows_cols(local, blocks, tr, MPI)
    return out[0], info

"""Fast-mode decisions of a block-distributed product (normwise certificate).

The line data and norm sums are exact (MAX, OR, SUM over k); the per-line data of
all rows and columns, O(m + n), is gathered to every rank, which runs the serial
decision (:func:`ozaki.core.decisions.decide_fast`) on it, so every rank holds the whole
product's count and shifts. Only the per-entry certificate of a block (when the
separable one fails, or bounds are wanted) is local; its failure count is an exact
SUM and its largest ratio a MAX over the grid.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core import decisions, scaling
from ..core.backend import Operand
from ..core.certify import Normwise, normwise_entries
from ..core.moduli import auto_num_moduli, plan_terms
from .traffic import allgather, allreduce

__all__ = ["line_data", "norm_data", "decide_fast"]


def line_data(op: Operand, backend, comm, MPI, tr) -> decisions.Lines:
    """The exact line data of this rank's block, reduced over ``comm`` (along k)."""
    maxbits, bad, nnz = (np.ascontiguousarray(x) for x in backend.line_stats(op))
    allreduce(comm, maxbits, MPI.MAX, tr)
    bad = bad.astype(np.uint8)
    allreduce(comm, bad, MPI.MAX, tr)
    allreduce(comm, nnz, MPI.SUM, tr)
    return decisions.Lines(maxbits, bad.astype(bool), nnz)


def norm_data(op: Operand, lines: decisions.Lines, k: int, backend, comm, MPI, tr
              ) -> decisions.Norms:
    """Fast mode's exact norm sums at the whole lines' exponents, reduced over ``comm``."""
    h = scaling.norm_bits(k)
    E, zero = lines.exponents
    shift = np.where(zero, 0, h - E).astype(np.int64)
    S2, S1 = (np.ascontiguousarray(x) for x in backend.norm_sums(op, shift))
    allreduce(comm, S2, MPI.SUM, tr)
    allreduce(comm, S1, MPI.SUM, tr)
    return decisions.Norms(h, S2, S1)


def _everyone(comm, parts: list[np.ndarray], index: np.ndarray, tr) -> list[np.ndarray]:
    """Each array of ``parts`` (1, lines) joined over ``comm``'s ranks, in the order of the
    lines' global ``index`` (this rank's lines; every line held by one rank of ``comm``)."""
    got = allgather(comm, parts + [index[None]], tr)
    order = np.argsort(np.concatenate([g[-1][0] for g in got]), kind="stable")
    return [np.concatenate([g[i] for g in got], axis=-1)[:, order] for i in range(len(parts))]


def _cut(nw: Normwise, idx: np.ndarray) -> Normwise:
    return Normwise(*(getattr(nw, f)[:, idx] for f in Normwise.__dataclass_fields__))


def decide_fast(grid, la, na_rows, lb, nb_cols, k, opts, MPI, rows, cols, kind, tr):
    """The whole product's fast-mode decision, restricted to this rank's block.

    ``grid`` joins the blocks (:class:`~ozaki.distributed.Grid`, or any object with its
    ``row``, ``col`` and ``comm``: the ranks holding this block's rows, its columns, every
    block); ``rows`` and ``cols`` are the global indices of the block's rows and
    columns (ranges for the block layout; any increasing indices, as a block-cyclic
    layout's). For a complex product the columns are the real embedding's ``[Re | Im]``:
    the block's are ``cols`` and ``N + cols``.
    """
    rows, cols = (np.asarray(x, np.int64) for x in (rows, cols))
    m_lines = _everyone(grid.col, [la.maxbits, la.bad, la.nnz], rows, tr)  # every row
    n_lines = _everyone(grid.row, [lb.maxbits, lb.bad, lb.nnz], cols, tr)
    m_norms = _everyone(grid.col, [na_rows.S2, na_rows.S1], rows, tr)
    n_norms = _everyone(grid.row, [nb_cols.S2, nb_cols.S1], cols, tr)
    LA, LB = decisions.Lines(*m_lines), decisions.Lines(*n_lines)
    na = decisions.Norms(na_rows.h, *m_norms).normwise(LA)
    nbn = decisions.Norms(nb_cols.h, *n_norms)
    N = LB.maxbits.shape[1]
    if kind.complex:
        LB = decisions.Lines(*(kind.tile(x) for x in (LB.maxbits, LB.bad, LB.nnz)))
        nbn = decisions.Norms(nbn.h, kind.tile(nbn.S2), kind.tile(nbn.S1))
    nb = nbn.normwise(LB)
    start = auto_num_moduli(opts.scheme, k)
    whole = decisions.decide_fast(replace(opts, policy="none", want_bound=False), na, nb, 1,
                                  start)
    idx = np.concatenate((cols, N + cols)) if kind.complex else cols
    s, t = whole.s[:, rows], whole.t[:, idx]
    mask = bound = None
    max_ratio, uncertified = whole.max_ratio, whole.uncertified
    if (uncertified.any() and opts.policy != "none") or opts.want_bound:
        H, R, g2 = plan_terms(opts.scheme, whole.counts)
        ratio = np.empty((1, len(rows), len(idx)))
        bound = np.empty_like(ratio) if opts.want_bound else None
        fails = normwise_entries(_cut(na, rows), _cut(nb, idx), s, t, R, g2, ratio, bound)
        local_max = np.array([ratio.max(initial=0.0)])
        allreduce(grid.comm, local_max, MPI.MAX, tr)
        fails = np.ascontiguousarray(fails, dtype=np.int64)
        allreduce(grid.comm, fails, MPI.SUM, tr)
        max_ratio, uncertified, mask = local_max, fails, ratio > 1
    return decisions.Decision(whole.counts, s, t, mask, bound, max_ratio, uncertified,
                              "normwise")

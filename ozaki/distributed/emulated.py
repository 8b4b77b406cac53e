"""``distributed.dgemm``: Ozaki Scheme II over SUMMA, bitwise equal to serial ``ozaki.dgemm``.

The phases of :mod:`ozaki.pipeline`, with collectives between them:

1. **Decisions from exact data.** Each rank forms the line data of its blocks
   (:class:`ozaki.decisions.Lines`: MAX of the exponents, OR of the non-finite flags,
   SUM of the nonzeros) and reduces them along its process row (rows of ``A``) and
   column (columns of ``B``). *Fast mode*: the norm sums (exact int64 SUMs) at the
   exponents of the whole lines; the per-line data of all rows and columns, O(m + n),
   is gathered to every rank, which runs the serial decision on it; only the per-entry
   certificate of a block (when the separable one fails, or bounds are wanted) is local,
   its failure count an exact SUM and its largest ratio a MAX over the grid. *Accurate
   mode* (:mod:`ozaki.distributed.accurate`): the floor GEMM by a SUMMA of the floor
   panels (exact integers), then the serial decision on the rank's block with every
   maximum, total and refinement choice reduced over the grid.
2. **SUMMA on residues.** For each k-panel (the union of ``A``'s column and ``B``'s row
   block boundaries, cut to ``panel`` columns), the owners broadcast the FP64 panels
   along the process row and column (the bytes of a native SUMMA); each rank forms the
   residues of what it received with the whole product's shifts, multiplies them
   exactly modulus by modulus and adds the products to its accumulators. The sums stay
   exact integers (each below ``panels * 2**52``), congruent to the whole product's
   modular products, so
3. **the CRT** sees the residues a serial call sees, and gives its bits.
4. **Fallback, overflow guard, non-finite values**: where any rank needs them, the
   ranks gather the full rows of ``A`` along their process row and the full columns
   of ``B`` along their column, and each finishes its block as the serial call does
   (the exactly rounded dot product is unique, so these entries agree too).

Every rank returns its block of ``C`` and the same ``info`` (counts, certificate,
fallback and exact entries as totals over the grid; ``seconds`` are the rank's own).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .. import decisions, scaling
from .. import fallback as _fallback
from ..backend import Operand
from ..certify import CertificationError, Certificate, Normwise, explain, normwise_entries
from ..info import OzakiInfo
from ..moduli import MODULI, auto_num_moduli, crt_plan, plan_terms
from ..products import gemms_per_modulus, modular_product
from ..residues import fits_split
from .layout import DistributedMatrix, bounds
from .traffic import Traffic, allgather, allreduce, bcast

__all__ = ["dgemm", "panels"]


def panels(k: int, P: int, Q: int, width: int) -> list[tuple[int, int]]:
    """k-panels ``[k0, k1)``: inside one column block of ``A`` and one row block of ``B``,
    at most ``width`` wide."""
    edges = sorted(set(bounds(k, Q).tolist()) | set(bounds(k, P).tolist()))
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        out += [(s, min(hi, s + width)) for s in range(lo, hi, width)]
    return out


def _lines(op: Operand, backend, comm, MPI, tr) -> decisions.Lines:
    maxbits, bad, nnz = (np.ascontiguousarray(x) for x in backend.line_stats(op))
    allreduce(comm, maxbits, MPI.MAX, tr)
    bad = bad.astype(np.uint8)
    allreduce(comm, bad, MPI.MAX, tr)
    allreduce(comm, nnz, MPI.SUM, tr)
    return decisions.Lines(maxbits, bad.astype(bool), nnz)


def _norms(op: Operand, lines: decisions.Lines, k: int, backend, comm, MPI, tr) -> decisions.Norms:
    h = scaling.norm_bits(k)
    E, zero = lines.exponents
    shift = np.where(zero, 0, h - E).astype(np.int64)
    S2, S1 = (np.ascontiguousarray(x) for x in backend.norm_sums(op, shift))
    allreduce(comm, S2, MPI.SUM, tr)
    allreduce(comm, S1, MPI.SUM, tr)
    return decisions.Norms(h, S2, S1)


def _everyone(comm, parts: list[np.ndarray], tr) -> list[np.ndarray]:
    """Each array of ``parts`` (1, lines) concatenated over ``comm``'s ranks, in rank order."""
    got = allgather(comm, parts, tr)
    return [np.concatenate([g[i] for g in got], axis=-1) for i in range(len(parts))]


def _cut(nw: Normwise, lo: int, hi: int) -> Normwise:
    return Normwise(*(getattr(nw, f)[:, lo:hi] for f in Normwise.__dataclass_fields__))


def _decide(grid, la, na_rows, lb, nb_cols, k, opts, MPI, rows, cols, tr):
    """The whole product's fast-mode decision, restricted to this rank's block."""
    m_lines = _everyone(grid.col, [la.maxbits, la.bad, la.nnz], tr)  # rows of every block row
    n_lines = _everyone(grid.row, [lb.maxbits, lb.bad, lb.nnz], tr)
    m_norms = _everyone(grid.col, [na_rows.S2, na_rows.S1], tr)
    n_norms = _everyone(grid.row, [nb_cols.S2, nb_cols.S1], tr)
    LA, LB = decisions.Lines(*m_lines), decisions.Lines(*n_lines)
    na = decisions.Norms(na_rows.h, *m_norms).normwise(LA)
    nb = decisions.Norms(nb_cols.h, *n_norms).normwise(LB)
    start = auto_num_moduli(opts.scheme, k)
    whole = decisions.decide_fast(na, nb, 1, opts.scheme, opts.num_moduli, "none", False, start)
    (r0, r1), (c0, c1) = rows, cols
    s, t = whole.s[:, r0:r1], whole.t[:, c0:c1]
    mask = bound = None
    max_ratio, uncertified = whole.max_ratio, whole.uncertified
    if (uncertified.any() and opts.policy != "none") or opts.want_bound:
        H, R, g2 = plan_terms(opts.scheme, whole.counts)
        ratio = np.empty((1, r1 - r0, c1 - c0))
        bound = np.empty_like(ratio) if opts.want_bound else None
        fails = normwise_entries(_cut(na, r0, r1), _cut(nb, c0, c1), s, t, R, g2, ratio, bound)
        local_max = np.array([ratio.max(initial=0.0)])
        allreduce(grid.comm, local_max, MPI.MAX, tr)
        fails = np.ascontiguousarray(fails, dtype=np.int64)
        allreduce(grid.comm, fails, MPI.SUM, tr)
        max_ratio, uncertified, mask = local_max, fails, ratio > 1
    return decisions.Decision(whole.counts, s, t, mask, bound, max_ratio, uncertified,
                              "normwise")


def _summa(A: DistributedMatrix, B: DistributedMatrix, dec, la, lb, opts, width, MPI, tr):
    """The CRT of the SUMMA-accumulated modular products: this rank's block of ``C``."""
    grid, backend, engine = A.grid, opts.backend, opts.engine
    N = int(dec.counts[0])
    moduli = MODULI[opts.scheme][:N]
    (m0, m1), (n0, n1) = A.rows, B.cols
    m, n, k = m1 - m0, n1 - n0, A.shape[1]
    acc = np.zeros((N, 1, m, n))
    akb, bkb = bounds(k, grid.Q), bounds(k, grid.P)
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    sec = dict.fromkeys(("residues", "products", "communication"), 0.0)
    for i, (k0, k1) in enumerate(panels(k, grid.P, grid.Q, width)):
        t0 = time.perf_counter()
        qa = int(np.searchsorted(akb, k0, side="right") - 1)  # owner column of A's panel
        pb = int(np.searchsorted(bkb, k0, side="right") - 1)  # owner row of B's panel
        pa = (np.ascontiguousarray(A.local[:, k0 - akb[qa]:k1 - akb[qa]]) if grid.q == qa
              else np.empty((m, k1 - k0)))
        bcast(grid.row, pa, qa, tr)
        pbk = (np.ascontiguousarray(B.local[k0 - bkb[pb]:k1 - bkb[pb]]) if grid.p == pb
               else np.empty((k1 - k0, n)))
        bcast(grid.col, pbk, pb, tr)
        t1 = time.perf_counter()
        sec["communication"] += t1 - t0
        if not (m and n):
            continue
        oa, ob = Operand(pa[None], 0), Operand(pbk[None], 1)
        RA = backend.residues(oa, dec.s, moduli, np.empty((N,) + oa.layout(1)),
                              fits_split(Ea, za, dec.s))
        RB = backend.residues(ob, dec.t, moduli, np.empty((N,) + ob.layout(1)),
                              fits_split(Eb, zb, dec.t))
        t2 = time.perf_counter()
        sec["residues"] += t2 - t1
        prod = np.empty((1, m, n))
        for q, p in enumerate(moduli):
            modular_product(backend, engine, RA[q], RB[q], p, prod)
            backend.reduce_into(acc[q], prod, p, i == 0)  # exact: |acc| < panels * 2**52
        sec["products"] += time.perf_counter() - t2
    out = np.empty((1, m, n))
    if m and n:
        backend.reconstruct(acc, crt_plan(opts.scheme, N), dec.s, dec.t, out, products=True)
    return out, sec


def _whole_lines(D: DistributedMatrix, comm, axis: int, tr) -> np.ndarray:
    """This rank's rows of ``A`` (axis 1: blocks along the row) or columns of ``B`` in full."""
    return np.concatenate(allgather(comm, D.local, tr, "fallback"), axis=axis)


def _check(A, B, MPI):
    """The same verdict on every rank: grids, global shapes and blocks agree."""
    if not isinstance(A, DistributedMatrix) or not isinstance(B, DistributedMatrix):
        raise TypeError("A and B must be ozaki.distributed.DistributedMatrix (see scatter)")
    grid = A.grid
    if B.grid.comm is not grid.comm and MPI.Comm.Compare(B.grid.comm, grid.comm) not in (
            MPI.IDENT, MPI.CONGRUENT):
        raise ValueError("A and B are distributed over different communicators")
    mine = (tuple(A.shape), tuple(B.shape), (A.grid.P, A.grid.Q), (B.grid.P, B.grid.Q))
    every = grid.comm.allgather(mine)
    if any(e != every[0] for e in every):
        raise ValueError(f"the ranks disagree on the global shapes or grids: {sorted(set(every))}")
    (M, K), (K2, N), ga, gb = every[0]
    if ga != gb:
        raise ValueError(f"A is on a {ga[0]} x {ga[1]} grid, B on {gb[0]} x {gb[1]}")
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {M} x {K}, B is {K2} x {N}")
    return grid, M, K, N


def dgemm(A: DistributedMatrix, B: DistributedMatrix, *, scheme: str = "auto",
          num_moduli="auto", mode: str = "accurate", engine="auto", fallback=None,
          panel: int = 512, return_info: bool = False, bounds: bool = False):
    """``C = A @ B`` over the grid, bitwise equal to ``ozaki.dgemm`` on the whole matrices.

    Parameters
    ----------
    A : DistributedMatrix, global shape (M, K)
    B : DistributedMatrix, global shape (K, N), on the same grid
    scheme, num_moduli, engine, fallback
        As in :func:`ozaki.dgemm`.
    mode : {"accurate", "fast"}
        As in :func:`ozaki.dgemm`: accurate mode's decisions are reduced over the grid
        as :mod:`ozaki.distributed.accurate` lists, fast mode's from the gathered line
        data.
    panel : int
        Largest k-panel width of the SUMMA (any width gives the same bits).
    return_info, bounds
        As in :func:`ozaki.dgemm`; ``info.error_bound`` is this rank's block.

    Returns
    -------
    C : DistributedMatrix, global shape (M, N)
    info : OzakiInfo
        The same on every rank, but for ``seconds`` (this rank's, with
        ``communication``) and ``traffic`` (a :class:`~ozaki.distributed.traffic.Traffic`:
        the bytes and messages this rank sent, by kind: ``"panels"``,
        ``"decisions"``, ``"fallback"``).
    """
    MPI = __import__("mpi4py.MPI", fromlist=["MPI"])
    grid, M, K, N = _check(A, B, MPI)
    if isinstance(panel, bool) or not isinstance(panel, (int, np.integer)) or panel < 1:
        raise ValueError(f"panel must be a positive integer, got {panel!r}")
    from ..front import _options
    opts = _options(scheme, num_moduli, mode, engine, fallback, bounds)
    backend = opts.backend
    t0 = time.perf_counter()
    (m0, m1), (n0, n1) = A.rows, B.cols
    if M == 0 or N == 0 or K == 0:
        count = auto_num_moduli(opts.scheme, K) if opts.num_moduli == "auto" else opts.num_moduli
        info = OzakiInfo(opts.scheme, count, opts.mode, opts.engine.name,
                         bound_kind="normwise" if opts.mode == "fast" else "componentwise")
        info.slice_moduli = np.full(1, count)
        if opts.want_bound:
            info.error_bound = np.zeros((m1 - m0, n1 - n0))
        info.traffic = Traffic()
        C = DistributedMatrix(np.zeros((m1 - m0, n1 - n0)), (M, N), grid)
        return (C, info) if (return_info or bounds) else C
    oa = Operand(np.ascontiguousarray(A.local)[None], 0)
    ob = Operand(np.ascontiguousarray(B.local)[None], 1)
    tr = Traffic()
    la, lb = _lines(oa, backend, grid.row, MPI, tr), _lines(ob, backend, grid.col, MPI, tr)
    if opts.mode == "accurate":
        from .accurate import decide_accurate
        dec = decide_accurate(A, B, la, lb, opts, int(panel), tr)
    else:
        na = _norms(oa, la, K, backend, grid.row, MPI, tr)
        nb = _norms(ob, lb, K, backend, grid.col, MPI, tr)
        dec = _decide(grid, la, na, lb, nb, K, opts, MPI, (m0, m1), (n0, n1), tr)
    N_mod = int(dec.counts[0])
    info = OzakiInfo(opts.scheme, N_mod, opts.mode, opts.engine.name)
    info.slice_moduli = dec.counts
    info.bound_kind = dec.kind
    info.max_bound_ratio = float(dec.max_ratio.max(initial=0.0))
    info.uncertified = int(dec.uncertified.sum())
    info.error_bound = dec.bound
    info.gemms = sum(gemms_per_modulus(opts.engine, p) for p in MODULI[opts.scheme][:N_mod])
    info.refined_block = dec.refined
    info.gemms += dec.gemms if opts.mode == "accurate" else 0
    if info.uncertified and opts.policy == "raise":
        raise CertificationError(explain(dec, opts.scheme, opts.mode))
    info.seconds["scaling"] += time.perf_counter() - t0
    out, sec = _summa(A, B, dec, la, lb, opts, int(panel), MPI, tr)
    info.seconds.update({k: info.seconds.get(k, 0.0) + v for k, v in sec.items()})
    t1 = time.perf_counter()
    mask = dec.mask if info.uncertified and opts.policy == "exact" else None
    _finish(grid, A, B, info, dec, mask, opts, out, la, lb, K, MPI, tr)
    info.seconds["reconstruction"] += time.perf_counter() - t1
    if info.error_bound is not None:
        info.error_bound = info.error_bound[0]
    info.traffic = tr
    C = DistributedMatrix(out[0], (M, N), grid)
    return (C, info) if (return_info or bounds) else C


def _finish(grid, A, B, info, dec, mask, opts, out, la, lb, K, MPI, tr):
    """Fallback, overflow guard and non-finite values, with the full lines where needed."""
    (Ea, za), (Eb, zb) = la.exponents, lb.exponents
    lk = int(np.ceil(np.log2(max(K, 1))))
    top = lambda E, z: int(np.where(z, -10 ** 6, E).max(initial=-10 ** 6))  # noqa: E731
    busy = np.array([int(top(Ea, za) + top(Eb, zb) + lk >= _fallback.OVERFLOW_EXPONENT
                         or la.bad.any() or lb.bad.any()
                         or (mask is not None and mask.any()))], np.int64)
    allreduce(grid.comm, busy, MPI.MAX, tr)
    if busy[0]:  # every rank joins the gathers, whether or not its block needs them
        rows, cols = _whole_lines(A, grid.row, 1, tr), _whole_lines(B, grid.col, 0, tr)
        _fallback.finish(info, replace(dec, mask=mask), opts.policy, out, la, lb, K, 1, False,
                         lambda g: (rows, cols))
    elif info.error_bound is not None:
        _fallback.finish(info, dec, opts.policy, out, la, lb, K, 1, False, None)
    local = np.array([info.fallback_entries, info.exact_entries], np.int64)
    allreduce(grid.comm, local, MPI.SUM, tr)
    info.fallback_entries, info.exact_entries = int(local[0]), int(local[1])
    if mask is not None:
        info.fallback = "exact"
        r = mask[0].any(axis=1).astype(np.uint8)
        c = mask[0].any(axis=0).astype(np.uint8)
        allreduce(grid.row, r, MPI.MAX, tr)  # a row's entries span the row
        allreduce(grid.col, c, MPI.MAX, tr)
        counts = np.array([int(r.sum()) if grid.q == 0 else 0, int(c.sum()) if grid.p == 0
                           else 0], np.int64)
        allreduce(grid.comm, counts, MPI.SUM, tr)
        info.fallback_block = (int(counts[0]), int(counts[1]))

"""``distributed.dgemm``: Ozaki Scheme II over SUMMA, bitwise equal to serial ``ozaki.dgemm``.

The phases of :mod:`ozaki.core.pipeline`, with collectives between them:

1. **Decisions from exact data.** Each rank forms the line data of its blocks
   (:class:`ozaki.core.decisions.Lines`: MAX of the exponents, OR of the non-finite flags,
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
   exactly modulus by modulus and adds the products, reduced to symmetric residues, to
   its accumulators. The sums stay exact integers (at most ``panels * p / 2``),
   congruent to the whole product's modular products, so
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

import numpy as np

from ..api.calls import compensated_product, empty_product, parts_bound
from ..api.calls import options as options_of
from ..core import compensated
from ..core import fallback as _fallback
from ..core.certify import CertificationError, explain
from ..core.kind import COMPLEX, REAL, Kind
from ..core.info import OzakiInfo
from ..core.pipeline import widened
from .accurate import decide_accurate, real_operands
from .fast import decide_fast, line_data, norm_data
from .layout import DistributedMatrix, agree
from .modular import embedded, modular_summa
from .traffic import Traffic, allgather_blocks, allreduce

__all__ = ["dgemm", "zgemm"]


def check_operands(A, B, options: dict, kind: Kind, MPI):
    """The same verdict on every rank, before any other collective.

    Each rank checks its own arguments, then the ranks compare what they were given
    (global shapes, grids, options, local errors): a problem anywhere is raised
    everywhere, so no rank waits in a collective the others skipped. Returns the grid,
    ``(M, K, N)`` and the resolved options.
    """
    home = A if isinstance(A, DistributedMatrix) else B
    if not isinstance(home, DistributedMatrix):  # no communicator to agree on
        raise TypeError("A and B must be ozaki.distributed.DistributedMatrix (see scatter)")
    grid = home.grid
    resolved = {}

    def check():
        if not isinstance(A, DistributedMatrix) or not isinstance(B, DistributedMatrix):
            raise TypeError("A and B must be ozaki.distributed.DistributedMatrix (see scatter)")
        if B.grid.comm is not grid.comm and MPI.Comm.Compare(B.grid.comm, grid.comm) not in (
                MPI.IDENT, MPI.CONGRUENT):
            raise ValueError("A and B are distributed over different communicators")
        if not kind.complex and (np.iscomplexobj(A.local) or np.iscomplexobj(B.local)):
            raise TypeError("A or B is complex: use ozaki.distributed.zgemm")
        panel = options["panel"]
        if isinstance(panel, bool) or not isinstance(panel, (int, np.integer)) or panel < 1:
            raise ValueError(f"panel must be a positive integer, got {panel!r}")
        resolved["opts"] = options_of(*(options[k] for k in ("scheme", "num_moduli", "mode",
                                                          "engine", "fallback", "bounds",
                                                          "backend")))
        # the backend each rank resolved (a thread's default may differ between ranks)
        return (tuple(A.shape), tuple(B.shape), (A.grid.P, A.grid.Q), (B.grid.P, B.grid.Q),
                repr(sorted((k, str(getattr(v, "name", v))) for k, v in options.items())),
                resolved["opts"].backend.name, resolved["opts"].scheme,
                resolved["opts"].engine.name)

    # the ranks must also resolve the same scheme and engine ("auto" follows each
    # rank's machine: ranks of different CPUs must name them)
    (M, K), (K2, N), ga, gb, _, _, _, _ = agree(grid.comm, check)
    opts = resolved["opts"]
    if ga != gb:
        raise ValueError(f"A is on a {ga[0]} x {ga[1]} grid, B on {gb[0]} x {gb[1]}")
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {M} x {K}, B is {K2} x {N}")
    return grid, (M, K, N), opts


def dgemm(A: DistributedMatrix, B: DistributedMatrix, *, scheme: str = "auto",
          num_moduli="auto", mode: str = "accurate", engine="auto", fallback=None,
          panel: int = 512, return_info: bool = False, bounds: bool = False,
          backend=None):
    """``C = A @ B`` over the grid, bitwise equal to ``ozaki.dgemm`` on the whole matrices.

    Parameters
    ----------
    A : DistributedMatrix, global shape (M, K), float64
    B : DistributedMatrix, global shape (K, N), float64, on the same grid
    scheme, num_moduli, engine, fallback
        As in :func:`ozaki.dgemm`.
    mode : {"accurate", "fast"}
        As in :func:`ozaki.dgemm`: accurate mode's decisions are reduced over the grid
        as :mod:`ozaki.distributed.accurate` lists, fast mode's from the gathered line
        data (:mod:`ozaki.distributed.fast`).
    panel : int
        Largest k-panel width of the SUMMA (any width gives the same bits).
    return_info, bounds
        As in :func:`ozaki.dgemm`; ``info.error_bound`` is this rank's block.
    backend : str or Backend, optional
        As in :func:`ozaki.dgemm` (every rank must name the same one).

    Returns
    -------
    C : DistributedMatrix, global shape (M, N)
    info : OzakiInfo
        The same on every rank, but for ``seconds`` (this rank's, with
        ``communication``) and ``traffic`` (a :class:`~ozaki.distributed.traffic.Traffic`:
        the bytes and messages this rank sent, by kind: ``"panels"``,
        ``"decisions"``, ``"fallback"``).

    Raises
    ------
    TypeError
        Complex blocks (use :func:`zgemm`), or operands that are not
        :class:`~ozaki.distributed.DistributedMatrix`.
    ValueError
        Shapes or grids that differ, or that the ranks disagree on; bad options
        (as :func:`ozaki.dgemm`). Every rank raises the same error.
    """
    MPI = __import__("mpi4py.MPI", fromlist=["MPI"])
    options = dict(scheme=scheme, num_moduli=num_moduli, mode=mode, engine=engine,
                   fallback=fallback, bounds=bounds, panel=panel, backend=backend)
    grid, shape, opts = check_operands(A, B, options, REAL, MPI)
    return _product(A, B, grid, shape, opts, int(panel), return_info, bounds, REAL, MPI)


def zgemm(A: DistributedMatrix, B: DistributedMatrix, *, scheme: str = "auto",
          num_moduli="auto", mode: str = "accurate", engine="auto", fallback=None,
          panel: int = 512, return_info: bool = False, bounds: bool = False,
          backend=None):
    """Complex ``C = A @ B`` over the grid, bitwise equal to ``ozaki.zgemm`` on the whole.

    Real blocks are taken as complex. The residue SUMMA multiplies the embedded panels
    by Gauss's three products per modulus, each summed over the panels apart; the
    decisions are those of the real embedding (:func:`ozaki.zgemm`). Parameters and
    results as in :func:`dgemm`; ``C`` is complex128 and ``info.error_bound`` complex
    (one bound per part).
    """
    MPI = __import__("mpi4py.MPI", fromlist=["MPI"])
    options = dict(scheme=scheme, num_moduli=num_moduli, mode=mode, engine=engine,
                   fallback=fallback, bounds=bounds, panel=panel, backend=backend)
    grid, shape, opts = check_operands(A, B, options, COMPLEX, MPI)
    A, B = (DistributedMatrix(D.local.astype(np.complex128, copy=False), D.shape, D.grid)
            for D in (A, B))
    return _product(A, B, grid, shape, opts, int(panel), return_info, bounds, COMPLEX, MPI)


def _product(A, B, grid, shape, opts, panel, return_info, bounds, kind, MPI):
    backend = opts.backend
    M, K, N = shape
    Ke = kind.width * K  # the real embedding's inner dimension
    t0 = time.perf_counter()
    (m0, m1), (n0, n1) = A.rows, B.cols
    tr = Traffic()
    if M == 0 or N == 0 or K == 0:
        C, info = empty_product(opts, 1, m1 - m0, n1 - n0, K, kind)
        if info.error_bound is not None:
            info.error_bound = info.error_bound[0]
        info.traffic = tr
        C = DistributedMatrix(C[0], (M, N), grid)
        return (C, info) if (return_info or bounds) else C
    if compensated.applies(opts, False, M, N, K, kind):
        return _compensated(A, B, grid, shape, opts, return_info, bounds, kind, MPI, tr)
    oa = opts.backend.operand(embedded(A.local, 0)[None], 0)
    ob = opts.backend.operand(embedded(B.local, 1)[None], 1)
    la, lb = line_data(oa, backend, grid.row, MPI, tr), line_data(ob, backend, grid.col, MPI, tr)

    def decide(opts):
        if opts.mode == "accurate":
            return decide_accurate(A, B, oa, ob, la, lb, opts, panel, kind, tr)
        na = norm_data(oa, la, Ke, backend, grid.row, MPI, tr)
        nb = norm_data(ob, lb, Ke, backend, grid.col, MPI, tr)
        return decide_fast(grid, la, na, lb, nb, Ke, opts, MPI, np.arange(m0, m1),
                           np.arange(n0, n1), kind, tr)

    dec = decide(opts)
    wide = widened(opts, dec)  # as serial: the counts of uncertified entries are global
    if wide is not None:
        opts = wide
        dec = decide(opts)
    info = OzakiInfo.from_decision(opts, dec, kind)
    if info.uncertified and opts.policy == "raise":
        raise CertificationError(explain(dec, opts.scheme, opts.mode))
    info.seconds["scaling"] += time.perf_counter() - t0
    out, sec = modular_summa(A, B, dec, la, lb, opts, panel, kind, tr)
    info.seconds.update({k: info.seconds.get(k, 0.0) + v for k, v in sec.items()})
    t1 = time.perf_counter()
    mask = dec.mask if info.uncertified and opts.policy == "exact" else None
    _finish(grid, A, B, info, dec, mask, opts, out, la, lb, Ke, kind, MPI, tr)
    info.seconds["reconstruction"] += time.perf_counter() - t1
    info.traffic = tr
    n = n1 - n0
    if kind.complex:
        C = np.empty((m1 - m0, n), np.complex128)
        C.real, C.imag = out[0][:, :n], out[0][:, n:]
        if info.error_bound is not None:
            info.error_bound = parts_bound(info.error_bound, n, kind)[0]
    else:
        C = out[0]
        if info.error_bound is not None:
            info.error_bound = info.error_bound[0]
    C = DistributedMatrix(C, (M, N), grid)
    return (C, info) if (return_info or bounds) else C


def _compensated(A, B, grid, shape, opts, return_info, bounds, kind, MPI, tr):
    """A small product (:mod:`ozaki.core.compensated`): each rank gathers its full rows of
    ``A`` and columns of ``B`` and computes its block as the serial call does (each
    entry depends on its row and column alone); the counts are totals over the grid."""
    t0 = time.perf_counter()
    Ar = allgather_blocks(grid.row, A.local, 1, tr, "panels")
    Bc = allgather_blocks(grid.col, B.local, 0, tr, "panels")
    t1 = time.perf_counter()
    m, n = Ar.shape[0], Bc.shape[1]
    out, info, where = compensated_product(Ar[None], Bc[None], opts, kind, 1, m, n,
                                           shape[1])
    t2 = time.perf_counter()
    # the first uncertified entry in row-major order of the (embedded) product, as serial
    nq, N = B.cols[1] - B.cols[0], shape[2]
    first = shape[0] * 2 * N
    if where is not None:
        i, j = (int(x) for x in np.argwhere(where[0])[0])
        col = B.cols[0] + j if j < nq else N + B.cols[0] + j - nq
        first = (A.rows[0] + i) * (kind.width * N) + col
    counts = np.array([info.exact_entries, info.uncertified, -first], np.int64)
    allreduce(grid.comm, counts[:2], MPI.SUM, tr)
    info.exact_entries, info.uncertified = int(counts[0]), int(counts[1])
    if info.uncertified:
        top = counts[2:]
        allreduce(grid.comm, top, MPI.MAX, tr)
        info.max_bound_ratio = np.inf
        if opts.policy == "raise":  # on every rank, after the same reductions
            raise CertificationError(compensated.explain(
                info.uncertified, divmod(int(-top[0]), kind.width * N)))
        if opts.policy == "exact":
            local = where if where is not None else np.zeros(out.shape[:2] + (
                kind.width * n,), bool)
            info.fallback, info.fallback_entries = "exact", info.uncertified
            info.fallback_block = _fallback_block(grid, local[0], MPI, tr)
    info.seconds["communication"] = (t1 - t0) + (time.perf_counter() - t2)
    info.traffic = tr
    if info.error_bound is not None:
        info.error_bound = parts_bound(info.error_bound, n, kind)[0]
    C = DistributedMatrix(out[0], (shape[0], shape[2]), grid)
    return (C, info) if (return_info or bounds) else C


def _fallback_block(grid, mask: np.ndarray, MPI, tr) -> tuple[int, int]:
    """``(rows, columns)`` of the whole product that hold an entry of the ranks' ``mask``
    blocks (m_p, n_q) (every rank joins)."""
    r = mask.any(axis=1).astype(np.uint8)
    c = mask.any(axis=0).astype(np.uint8)
    allreduce(grid.row, r, MPI.MAX, tr)  # a row's entries span the row
    allreduce(grid.col, c, MPI.MAX, tr)
    counts = np.array([int(r.sum()) if grid.q == 0 else 0, int(c.sum()) if grid.p == 0
                       else 0], np.int64)
    allreduce(grid.comm, counts, MPI.SUM, tr)
    return int(counts[0]), int(counts[1])


def _finish(grid, A, B, info, dec, mask, opts, out, la, lb, Ke, kind, MPI, tr):
    """Fallback, overflow guard and non-finite values, with the full lines where needed."""
    busy = np.array([int(_fallback.needs_operands(la, lb, Ke, 1, mask).busy[0])], np.int64)
    allreduce(grid.comm, busy, MPI.MAX, tr)
    operands = None
    if busy[0]:  # every rank joins the gathers, whether or not its block needs them
        Ar = allgather_blocks(grid.row, A.local, 1, tr, "fallback")
        Bc = allgather_blocks(grid.col, B.local, 0, tr, "fallback")
        whole = real_operands(Ar, Bc)
        operands = lambda g: whole  # noqa: E731
    if busy[0] or info.error_bound is not None:
        _fallback.finish(opts.backend, info, dec, opts.policy, out, la, lb, Ke, 1, kind, operands)
    local = np.array([info.fallback_entries, info.exact_entries], np.int64)
    allreduce(grid.comm, local, MPI.SUM, tr)
    info.fallback_entries, info.exact_entries = int(local[0]), int(local[1])
    if mask is not None:
        info.fallback = "exact"
        info.fallback_block = _fallback_block(grid, mask[0], MPI, tr)

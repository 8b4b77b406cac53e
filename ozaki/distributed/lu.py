"""LU with partial pivoting over a process grid, bitwise equal to serial ``ozaki.linalg``.

:func:`lu_factor` runs serial :func:`ozaki.linalg.lu_factor`'s blocked right-looking
algorithm on a block-cyclic matrix (:mod:`ozaki.distributed.cyclic`) whose block size
is the panel width ``nb``. For the panel ``k:e`` (block column ``K = k // nb``, held by
process column ``K mod Q``; its diagonal block by process row ``K mod P``):

1. **panel**: the owning process column factors it with partial pivoting
   (:mod:`ozaki.distributed.panel`: one all-gather per column for the pivot);
2. **broadcast** of the panel's rows along each process row, with the pivots;
3. **interchanges** of the rows outside the panel (:mod:`ozaki.distributed.rows`:
   one all-to-all per process column);
4. ``U12 <- L11^-1 A12`` on the diagonal process row (the serial compiled kernel, whose
   columns are independent), **broadcast** down each process column;
5. ``A22 <- A22 - L21 U12`` through :func:`ozaki.distributed.update.product`: each rank
   multiplies its rows of ``L21`` by its columns of ``U12`` with the count, shifts and
   certificate the serial product decides over the whole update.

Every step does on each entry the IEEE operations serial ``lu_factor`` does, so the
factors and the pivots are its bits on any grid (the tests compare them bit for bit).
:func:`lu_solve` does the same for the blocked triangular solves: the right-hand sides
are gathered along process rows (every process column holds all of them, for its rows),
and each block update is a product whose rows are combined over the process column.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..linalg import kernels
from .cyclic import CyclicMatrix, owner
from ..linalg.arguments import trans_of
from .factor import Run, agree_factor, allgather_columns, ensure_rhs
from .panel import factor_panel
from .rows import composed, move_rows
from .traffic import bcast
from .triangular import Triangle, solve

__all__ = ["lu_factor", "lu_solve", "native_lu_factor", "native_lu_solve"]


def lu_factor(a: CyclicMatrix, overwrite_a: bool = False, check_finite: bool = True, *,
              return_info: bool = False, **product_options):
    """LU factorisation with partial pivoting of a block-cyclic matrix, as
    :func:`ozaki.linalg.lu_factor` with ``block_size=a.block_size``, bit for bit.

    Parameters
    ----------
    a : CyclicMatrix, global shape (M, N), float64
        From :func:`ozaki.distributed.scatter` with ``block_size``; its block size is
        the panel width. Never modified unless ``overwrite_a``.
    overwrite_a : bool
        Factor ``a.local`` in place.
    check_finite : bool
        Raise ``ValueError`` (on every rank) when any rank holds an inf or NaN.
    return_info : bool
        Also return a :class:`~ozaki.linalg.LinalgInfo` of this rank's time per phase
        (``communication`` among them) with a ``traffic`` attribute
        (:class:`~ozaki.distributed.traffic.Traffic`: bytes this rank sent, by kind).
    **product_options
        ``scheme``, ``num_moduli``, ``mode``, ``engine``, ``fallback``, as serial.

    Returns
    -------
    lu : CyclicMatrix
        The serial ``lu``'s entries, dealt as ``a``.
    piv : (min(M, N),) ndarray of int32
        The same on every rank (LAPACK's order, 0-based).

    Warns
    -----
    scipy.linalg.LinAlgWarning
        On every rank, for an exactly zero pivot, as serial.

    Raises
    ------
    TypeError, ValueError
        The same on every rank: not a float64 ``CyclicMatrix``, non-finite values,
        bad or disagreeing options.
    """
    opts, popts = agree_factor("lu_factor", a, check_finite, product_options)
    run = Run("lu_factor", a.shape, a.block_size, opts, popts)
    return _lu_factor(a, overwrite_a, return_info, run)


def native_lu_factor(a: CyclicMatrix, overwrite_a: bool = False, check_finite: bool = True,
                     *, return_info: bool = False):
    """:func:`lu_factor` with native FP64 updates (the BLAS's ``C - L @ U`` on each rank's
    block): the baseline of the HPL benchmark, on the same layout with the same panels
    and messages. Its bits depend on the grid and the BLAS, as any native HPL's."""
    opts, popts = agree_factor("native_lu_factor", a, check_finite, {})
    run = Run("native_lu_factor", a.shape, a.block_size, opts, popts, native=True)
    return _lu_factor(a, overwrite_a, return_info, run)


def _lu_factor(a: CyclicMatrix, overwrite_a: bool, return_info: bool, run: Run):
    M, N = a.shape
    nb, grid = a.block_size, a.grid
    W = a.local if overwrite_a else a.local.copy()
    piv, zero = _factor(W, a, run)
    if zero >= 0:
        from ..linalg.lu import linalg_warning
        warnings.warn(f"Diagonal number {zero + 1} is exactly zero. Singular matrix.",
                      linalg_warning(), stacklevel=2)
    lu_ = CyclicMatrix(W, (M, N), grid, nb)
    return run.finish((lu_, piv.astype(np.int32)), return_info)


def _factor(W: np.ndarray, a: CyclicMatrix, run: Run) -> tuple[np.ndarray, int]:
    grid, nb, rec = a.grid, a.block_size, run.rec
    M, N = a.shape
    rows, cols = a.rows, a.cols
    Kmin = min(M, N)
    piv = np.arange(Kmin, dtype=np.int64)
    zero = -1
    for k in range(0, Kmin, nb):
        w = min(nb, Kmin - k)
        e = k + w
        pc, lc = owner(k, nb, grid.Q)  # the panel's process column, its local column
        pr, lr = owner(k, nb, grid.P)  # the diagonal block's process row, its local row
        rk = int(np.searchsorted(rows, k))  # this rank's rows at k.., then at e..
        re_ = int(np.searchsorted(rows, e))
        ce = int(np.searchsorted(cols, e))
        # 1. the panel, on its process column
        panel = np.empty((len(rows) - rk, w))
        info = np.empty(w + 1, np.int64)
        if grid.q == pc:
            with rec.phase("panel"):
                panel[...] = W[rk:, lc:lc + w]
                p, z = factor_panel(panel, rows[rk:], k, grid.col, run.tr)
                W[rk:, lc:lc + w] = panel
            info[:w], info[w] = p, z
        # 2. the panel's rows and the pivots along each process row
        run.comm(bcast, grid.row, panel, pc, run.tr, "panels")
        run.comm(bcast, grid.row, info, pc, run.tr, "pivots")
        piv[k:e] = info[:w]
        if zero < 0 and info[w] >= 0:
            zero = int(info[w])
        # 3. the interchanges outside the panel
        outside = ((slice(0, lc), slice(lc + w, None)) if grid.q == pc else (slice(None),))
        run.comm(move_rows, grid.col, W, composed(info[:w], k), nb, outside, run.tr)
        if e >= N:
            continue
        # 4. U12 on the diagonal process row, down each process column
        U12 = np.empty((w, len(cols) - ce))
        if grid.p == pr:
            with rec.phase("triangular"):
                kernels.unit_lower_solve(panel[:w], W[lr:lr + w, ce:])
            U12[...] = W[lr:lr + w, ce:]
        run.comm(bcast, grid.col, U12, pr, run.tr, "panels")
        # 5. the trailing update
        if e < M:
            run.update(W[re_:, ce:], panel[re_ - rk:], U12, rows[re_:] - e, cols[ce:] - e,
                       (M - e, N - e, w), grid)
    return piv, zero


def lu_solve(lu_and_piv: tuple, b: CyclicMatrix, trans: int | str = 0,
             overwrite_b: bool = False, check_finite: bool = True, *,
             return_info: bool = False, **product_options):
    """Solve ``a x = b`` (or ``a^T x = b``) from :func:`lu_factor`'s ``(lu, piv)``: serial
    :func:`ozaki.linalg.lu_solve`'s bits, with ``block_size=lu.block_size``.

    Parameters
    ----------
    lu_and_piv : (CyclicMatrix, ndarray)
    b : CyclicMatrix, global shape (N, nrhs), on ``lu``'s grid with its block size
    trans : {0, 1, 2, 'N', 'T', 'C'}
        0: ``a x = b``; 1 or 2: ``a^T x = b`` (the matrices are real).
    overwrite_b, check_finite, return_info, **product_options
        As :func:`lu_factor`.

    Returns
    -------
    x : CyclicMatrix, global shape (N, nrhs), dealt as ``b``
    """
    lu_, piv = lu_and_piv
    opts, popts = agree_factor("lu_solve", lu_, check_finite, product_options, square=True,
                               b=b, piv=piv, trans=trans, name="lu")
    run = Run("lu_solve", lu_.shape, lu_.block_size, opts, popts)
    return _lu_solve(lu_, piv, b, overwrite_b, return_info, run, trans_of(trans) != 0)


def native_lu_solve(lu_and_piv: tuple, b: CyclicMatrix, overwrite_b: bool = False,
                    check_finite: bool = True, *, return_info: bool = False):
    """:func:`lu_solve` with native FP64 block updates (the HPL benchmark's baseline)."""
    lu_, piv = lu_and_piv
    opts, popts = agree_factor("native_lu_solve", lu_, check_finite, {}, square=True, b=b,
                               piv=piv, name="lu")
    run = Run("native_lu_solve", lu_.shape, lu_.block_size, opts, popts, native=True)
    return _lu_solve(lu_, piv, b, overwrite_b, return_info, run)


def _lu_solve(lu_, piv, b, overwrite_b, return_info, run, transposed=False):
    """``a = P L U``: ``x = U^-1 L^-1 P^T b``, or for ``a^T``, ``x = P L^-T U^-T b`` (the
    interchanges in reverse order), as serial ``solve_factored``."""
    nb, grid = lu_.block_size, lu_.grid
    X = run.comm(allgather_columns, b, run.tr)  # this rank's rows, every column
    moves = composed(np.asarray(piv), 0, reverse=transposed)
    if not transposed:
        run.comm(move_rows, grid.col, X, moves, nb, (slice(None),), run.tr)
        solve(Triangle(lu_, lower=True, unit=True), X, run)
        solve(Triangle(lu_, lower=False, unit=False), X, run)
    else:  # a^T = U^T L^T P^T
        solve(Triangle(lu_, lower=True, unit=False, transposed=True), X, run)
        solve(Triangle(lu_, lower=False, unit=True, transposed=True), X, run)
        run.comm(move_rows, grid.col, X, moves, nb, (slice(None),), run.tr)
    x = ensure_rhs(b, X, overwrite_b)
    return run.finish(x, return_info)

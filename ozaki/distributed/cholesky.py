"""Cholesky over a process grid, bitwise equal to serial :func:`ozaki.linalg.cho_factor`.

Serial ``cho_factor`` is blocked right-looking on the lower triangle of ``W`` (``W = A``,
or for the upper form its transpose ``A^T``, whose lower triangle holds ``A``'s upper
one). For each block column ``k:e`` here, with ``(pr, pc)`` the rank holding the
diagonal block:

1. ``L11 = chol(A11)`` on ``(pr, pc)`` (the serial kernel); a failure is broadcast and
   raises the same ``LinAlgError`` on every rank; ``L11`` goes down process column ``pc``;
2. ``L21 <- A21 L11^-T`` on process column ``pc``, each rank its own rows (the serial
   kernel solves ``L11 B = A21^T``, whose columns are independent);
3. ``L21`` whole on every rank: gathered over process column ``pc``, broadcast along
   the process rows (the update reads it by rows, for ``C``'s rows, and by columns, for
   ``C``'s columns);
4. ``A22 <- A22 - L21 L21^T`` on each rank's block through
   :func:`ozaki.distributed.update.product` (the whole product's decisions: serial
   computes the full product, of which the lower triangle is kept, and so does each
   rank on its block).

The upper form runs the same steps on the transposed view: the local blocks of ``A^T``
on the transposed grid are the transposes of ``A``'s local blocks, its process rows are
``A``'s process columns. :func:`cho_solve` runs serial ``cho_solve``'s two blocked
triangular solves (:mod:`ozaki.distributed.triangular`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..linalg import kernels
from .cyclic import CyclicMatrix, owner
from .factor import Run, agree_factor, allgather_columns, allgather_lines, ensure_rhs
from .traffic import bcast
from .triangular import Triangle, solve

__all__ = ["cho_factor", "cho_solve"]


class _View(NamedTuple):
    """A block-cyclic matrix or its transpose: local array, global rows and columns, the
    grid's shape, position and communicators as the matrix sees them."""

    local: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    P: int
    Q: int
    p: int
    q: int
    row: Any
    col: Any
    comm: Any
    rank_of: Any  # (p, q) of the view -> rank in comm

    @classmethod
    def of(cls, W: np.ndarray, a: CyclicMatrix, transposed: bool) -> "_View":
        g = a.grid
        if not transposed:
            return cls(W, a.rows, a.cols, g.P, g.Q, g.p, g.q, g.row, g.col, g.comm,
                       lambda p, q: p * g.Q + q)
        return cls(W.T, a.cols, a.rows, g.Q, g.P, g.q, g.p, g.col, g.row, g.comm,
                   lambda p, q: q * g.Q + p)


def cho_factor(a: CyclicMatrix, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True, *, return_info: bool = False, **product_options):
    """Cholesky factorisation of a block-cyclic symmetric positive definite matrix, as
    :func:`ozaki.linalg.cho_factor` with ``block_size=a.block_size``, bit for bit.

    Parameters
    ----------
    a : CyclicMatrix, global shape (N, N), float64
        Only the triangle selected by ``lower`` is read. Never modified unless
        ``overwrite_a``.
    lower, overwrite_a, check_finite
        As serial (``check_finite``: any rank's inf or NaN raises on every rank).
    return_info, **product_options
        As :func:`ozaki.distributed.lu_factor`.

    Returns
    -------
    c : CyclicMatrix
        The factor in the selected triangle, ``a``'s entries in the other, dealt as ``a``.
    lower : bool

    Raises
    ------
    numpy.linalg.LinAlgError
        On every rank: "k-th leading minor of the array is not positive definite".
    TypeError, ValueError
        On every rank, as :func:`ozaki.distributed.lu_factor`.
    """
    opts, popts = agree_factor("cho_factor", a, check_finite, product_options, square=True)
    run = Run("cho_factor", a.shape, a.block_size, opts, popts)
    W = a.local if overwrite_a else a.local.copy()
    _factor(_View.of(W, a, not lower), a.shape[0], a.block_size, run)
    return run.finish((CyclicMatrix(W, a.shape, a.grid, a.block_size), bool(lower)),
                      return_info)


def _whole_rows(v: _View, part: np.ndarray, first: int, n: int, nb: int, root: int,
                run: Run) -> np.ndarray:
    """The rows ``first..n`` of a block column whose rows ``part`` (this rank's, ``>=
    first``) process column ``root`` holds: whole, in order, on every rank."""
    whole = (run.comm(allgather_lines, v.col, part, 0, n, nb, run.tr, "panels", first)
             if v.q == root else np.empty((n - first, part.shape[1])))
    run.comm(bcast, v.row, whole, root, run.tr, "panels")
    return whole


def _factor(v: _View, n: int, nb: int, run: Run) -> None:
    W, rows, cols, rec = v.local, v.rows, v.cols, run.rec
    for k in range(0, n, nb):
        e = min(k + nb, n)
        w = e - k
        pr, lr = owner(k, nb, v.P)
        pc, lc = owner(k, nb, v.Q)
        # 1. the diagonal block; its failure known everywhere
        D = np.empty((w, w))
        error = None
        if (v.p, v.q) == (pr, pc):
            with rec.phase("panel"):
                D[...] = W[lr:lr + w, lc:lc + w]
                try:
                    kernels.cholesky_block(D, k)
                except np.linalg.LinAlgError as exc:
                    error = str(exc)
                low = np.tril(np.ones((w, w), dtype=bool))
                W[lr:lr + w, lc:lc + w] = np.where(low, D, W[lr:lr + w, lc:lc + w])
        error = run.comm(v.comm.bcast, error, v.rank_of(pr, pc))
        if error is not None:
            raise np.linalg.LinAlgError(error)
        if e == n:
            break
        re_, ce = int(np.searchsorted(rows, e)), int(np.searchsorted(cols, e))
        # 2. L21 on the diagonal block's process column
        if v.q == pc:
            run.comm(bcast, v.col, D, pr, run.tr, "panels")
            with rec.phase("triangular"):
                B = np.array(W[re_:, lc:lc + w].T)  # L21^T = L11^-1 A21^T
                kernels.lower_solve(D, B, unit=False)
                W[re_:, lc:lc + w] = B.T
        # 3. L21 whole on every rank, 4. the update of this rank's block
        L21 = _whole_rows(v, W[re_:, lc:lc + w] if v.q == pc else np.empty((0, w)), e, n,
                          nb, pc, run)
        r, c = rows[re_:] - e, cols[ce:] - e
        T = np.array(W[re_:, ce:])
        run.update(T, L21[r], np.ascontiguousarray(L21[c].T), r, c, (n - e, n - e, w), v)
        with rec.phase("other"):
            keep = r[:, None] >= c[None, :]
            W[re_:, ce:] = np.where(keep, T, W[re_:, ce:])


def cho_solve(c_and_lower: tuple, b: CyclicMatrix, overwrite_b: bool = False,
              check_finite: bool = True, *, return_info: bool = False, **product_options):
    """Solve ``a x = b`` from :func:`cho_factor`'s ``(c, lower)``: serial
    :func:`ozaki.linalg.cho_solve`'s bits with ``block_size=c.block_size``.

    ``b`` is a :class:`CyclicMatrix` of global shape (N, nrhs) on ``c``'s grid with its
    block size; returns ``x`` dealt as ``b``. Other parameters as
    :func:`ozaki.distributed.lu_solve`.
    """
    c, lower = c_and_lower
    opts, popts = agree_factor("cho_solve", c, check_finite, product_options, square=True,
                               b=b, name="c")
    run = Run("cho_solve", c.shape, c.block_size, opts, popts)
    X = run.comm(allgather_columns, b, run.tr)
    lower = bool(lower)  # a = L L^T with L = c (lower) or c^T (upper)
    solve(Triangle(c, lower=True, unit=False, transposed=not lower), X, run)
    solve(Triangle(c, lower=False, unit=False, transposed=lower), X, run)
    return run.finish(ensure_rhs(b, X, overwrite_b), return_info)

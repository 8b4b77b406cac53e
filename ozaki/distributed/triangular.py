"""Blocked triangular solves with a block-cyclic factor: serial ``trsm``'s bits.

Serial :func:`ozaki.linalg.triangular.trsm` solves ``T X = B`` block by block (forward for
a lower triangle, backward for an upper one): the diagonal block's solve in a compiled
kernel, then one product ``B_rest <- B_rest - T_rest,blk X_blk`` per block. Here the
right-hand sides ``X`` are held by rows, the rows of the factor's process row, every
column on every process column (the process columns repeat the same work, so that no
step waits for a reduction across them). For each block ``k:e``:

1. the block column ``T[:, k:e]``, this rank's rows of it: broadcast along each process
   row from the process column holding it; for a transposed factor (``T = C^T``) the
   block row ``C[k:e, :]``, gathered along its process row and broadcast down each
   column;
2. the diagonal block's solve on the process row holding rows ``k:e`` (the serial kernel:
   its columns are independent), the solved block broadcast down each process column;
3. the update of the rows still to be solved, through
   :func:`ozaki.distributed.update.product` with the rows combined over the process
   column (each rank holds whole rows of ``T`` and every column of ``X``).

Each step does the serial solve's IEEE operations on each entry: the bits of serial
``trsm`` with the same block size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..linalg import kernels
from .cyclic import CyclicMatrix, owner
from .factor import Blocks, Run, allgather_lines
from .traffic import bcast

__all__ = ["Triangle", "solve"]


@dataclass(frozen=True)
class Triangle:
    """The triangle a solve reads: of ``matrix`` (``transposed``: of its transpose),
    ``lower`` or upper, with a ``unit`` diagonal or not."""

    matrix: CyclicMatrix
    lower: bool
    unit: bool
    transposed: bool = False


def _block_column(T: Triangle, k: int, e: int, run: Run) -> np.ndarray:
    """This rank's rows (those of its process row) of the block column ``k:e`` of ``T``."""
    C = T.matrix
    grid, nb, w = C.grid, C.block_size, e - k
    if not T.transposed:
        pc, lc = owner(k, nb, grid.Q)
        col = (np.ascontiguousarray(C.local[:, lc:lc + w]) if grid.q == pc
               else np.empty((len(C.rows), w)))
        run.comm(bcast, grid.row, col, pc, run.tr, "panels")
        return col
    # T[rows, k:e] = C[k:e, rows]^T: the block row of C, whole, on every rank
    pr, lr = owner(k, nb, grid.P)
    whole = (run.comm(allgather_lines, grid.row, C.local[lr:lr + w], 1, C.shape[1], nb,
                      run.tr, "panels") if grid.p == pr else np.empty((w, C.shape[1])))
    run.comm(bcast, grid.col, whole, pr, run.tr, "panels")
    return np.ascontiguousarray(whole[:, C.rows].T)


def solve(T: Triangle, X: np.ndarray, run: Run) -> None:
    """``X <- T^-1 X`` in place, ``X`` (this rank's rows, every column) as the module
    docstring says; collective over the grid."""
    from mpi4py import MPI
    C = T.matrix
    grid, nb, rows = C.grid, C.block_size, C.rows
    n, rec = C.shape[0], run.rec
    blocks = Blocks(MPI.COMM_SELF, grid.col, grid.col)
    starts = list(range(0, n, nb))
    for k in (starts if T.lower else reversed(starts)):
        e = min(k + nb, n)
        w = e - k
        pr, lr = owner(k, nb, grid.P)
        col = _block_column(T, k, e, run)
        Xk = np.empty((w, X.shape[1]))
        if grid.p == pr:
            with rec.phase("triangular"):
                D = col[lr:lr + w]
                if T.lower:
                    kernels.lower_solve(D, X[lr:lr + w], T.unit)
                else:
                    kernels.upper_solve(D, X[lr:lr + w], T.unit)
            Xk[...] = X[lr:lr + w]
        run.comm(bcast, grid.col, Xk, pr, run.tr, "panels")
        nrhs = np.arange(X.shape[1])
        if T.lower and e < n:
            r = int(np.searchsorted(rows, e))
            run.update(X[r:], col[r:], Xk, rows[r:] - e, nrhs, (n - e, X.shape[1], w), blocks)
        elif not T.lower and k > 0:
            r = int(np.searchsorted(rows, k))
            run.update(X[:r], col[:r], Xk, rows[:r], nrhs, (k, X.shape[1], w), blocks)

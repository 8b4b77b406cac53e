"""The 2-D block distribution of a matrix over a P x Q process grid
(:class:`~ozaki.distributed.grid.Grid`).

**Layout.** A global ``M x N`` matrix is cut into ``P`` row blocks and ``Q`` column
blocks as evenly as possible: block ``p`` holds rows ``[r_p, r_{p+1})`` with
``r_p = p (M // P) + min(p, M % P)`` (the first ``M % P`` blocks one row longer), and
likewise for columns. Rank ``(p, q)`` holds block ``(p, q)`` as a C-ordered float64
array, possibly empty (more processes than rows). Every rank knows the whole layout
from ``(M, N, P, Q)``: no communication is needed to find who holds what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .grid import Grid, agree, assemble, make_grid, send_blocks

__all__ = ["Grid", "make_grid", "bounds", "DistributedMatrix", "scatter", "gather",
           "send_blocks", "assemble", "agree"]


def bounds(size: int, parts: int) -> np.ndarray:
    """Block boundaries ``[b_0 = 0, ..., b_parts = size]`` of the even block cut."""
    i = np.arange(parts + 1, dtype=np.int64)
    return i * (size // parts) + np.minimum(i, size % parts)


@dataclass
class DistributedMatrix:
    """This rank's block of a global ``shape`` matrix block-distributed over ``grid``.

    Attributes
    ----------
    local : ndarray, float64 or complex128, C order
        Block ``(grid.p, grid.q)``: rows ``rows`` and columns ``cols`` of the whole.
    shape : tuple of int
        The global shape ``(M, N)``.
    grid : Grid
    """

    local: np.ndarray
    shape: tuple[int, int]
    grid: Grid

    def __post_init__(self):
        if self.local.dtype not in (np.float64, np.complex128):
            raise TypeError(f"the local block must be float64 or complex128, got "
                            f"{self.local.dtype}")
        M, N = self.shape
        want = (len(range(*self.rows)), len(range(*self.cols)))
        if self.local.shape != want:
            raise ValueError(f"rank ({self.grid.p}, {self.grid.q}) must hold a {want} block of "
                             f"the {M} x {N} matrix, got {self.local.shape}")

    @property
    def rows(self) -> tuple[int, int]:
        b = bounds(self.shape[0], self.grid.P)
        return int(b[self.grid.p]), int(b[self.grid.p + 1])

    @property
    def cols(self) -> tuple[int, int]:
        b = bounds(self.shape[1], self.grid.Q)
        return int(b[self.grid.q]), int(b[self.grid.q + 1])


def scatter(A: Any, grid: Grid, root: int = 0, shape: tuple[int, int] | None = None, *,
            block_size: int | None = None):
    """Distribute the matrix ``A`` held by ``root`` (other ranks pass ``None`` and ``shape``
    or ``None``: the shape is broadcast).

    Returns this rank's :class:`DistributedMatrix` (a copy; ``A`` is not modified); with
    ``block_size``, its :class:`~ozaki.distributed.CyclicMatrix` of the block-cyclic
    layout in ``block_size`` blocks (:mod:`ozaki.distributed.cyclic`), the layout of the
    factorisations.
    """
    if block_size is not None:
        from .cyclic import scatter_cyclic
        return scatter_cyclic(A, grid, block_size, root)
    comm = grid.comm
    error = None
    if comm.Get_rank() == root:
        from ..api.arguments import operand
        try:
            A = np.ascontiguousarray(operand(A, "A"))  # float64 or complex128
            shape = A.shape
        except (TypeError, ValueError) as exc:
            error = exc
    dtype = A.dtype if comm.Get_rank() == root and error is None else None
    shape, dtype, error = comm.bcast((shape, dtype, error), root=root)  # the same everywhere
    if error is not None:
        raise type(error)(str(error))
    shape = tuple(shape)
    mine = send_blocks(comm, A, _blocks(shape, grid), root, dtype)
    return DistributedMatrix(mine, shape, grid)


def gather(D, root: int | None = 0) -> np.ndarray | None:
    """The whole matrix on ``root`` (``None`` elsewhere); ``root=None``: on every rank.

    ``D`` is a :class:`DistributedMatrix` or a :class:`~ozaki.distributed.CyclicMatrix`.
    """
    from .cyclic import CyclicMatrix, gather_cyclic
    if isinstance(D, CyclicMatrix):
        return gather_cyclic(D, root)
    return assemble(D.grid.comm, D.local, _blocks(D.shape, D.grid), D.shape, root)


def _blocks(shape: tuple[int, int], grid: Grid):
    """``r -> `` rank ``r``'s block of a ``shape`` matrix (row and column slices)."""
    rb, cb = bounds(shape[0], grid.P), bounds(shape[1], grid.Q)

    def block(r: int) -> tuple[slice, slice]:
        p, q = divmod(r, grid.Q)
        return slice(int(rb[p]), int(rb[p + 1])), slice(int(cb[q]), int(cb[q + 1]))

    return block



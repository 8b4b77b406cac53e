"""The 2-D block-cyclic distribution (ScaLAPACK's and HPL's) over a ``P x Q`` grid.

The global ``M x N`` matrix is cut into ``nb x nb`` blocks (the last row and column of
blocks possibly shorter). Block ``(I, J)`` is held by the rank at ``(I mod P, J mod Q)``,
which stores its blocks in order: global row ``i`` of row block ``I = i // nb`` is local
row ``(I // P) nb + i mod nb`` of process row ``I mod P``, and likewise for columns. So
a rank's global rows (columns) are increasing in its local order, and every rank knows
the whole layout from ``(M, N, nb, P, Q)``.

Why block-cyclic for factorisations: the trailing matrix shrinks from the top left, and
dealing the blocks round the grid keeps every rank's share of it even to the end (a
block layout would leave the first process rows and columns idle after their blocks
are factored). Its block size is the factorisation's panel width: a panel is one block
column, held by one process column, and its diagonal block by one rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .grid import Grid, agree, assemble, send_blocks

__all__ = ["CyclicMatrix", "cyclic_indices", "owner", "scatter_cyclic", "gather_cyclic"]


@lru_cache(maxsize=256)
def _indices(size: int, nb: int, parts: int, part: int) -> np.ndarray:
    starts = np.arange(part * nb, size, parts * nb, dtype=np.int64)
    if not len(starts):
        return np.zeros(0, np.int64)
    idx = (starts[:, None] + np.arange(nb, dtype=np.int64)).ravel()
    out = idx[idx < size]
    out.flags.writeable = False
    return out


def cyclic_indices(size: int, nb: int, parts: int, part: int) -> np.ndarray:
    """The global indices (increasing, int64) that process ``part`` of ``parts`` holds of
    ``size`` rows or columns dealt in blocks of ``nb`` (a read-only array)."""
    return _indices(int(size), int(nb), int(parts), int(part))


def owner(index: int, nb: int, parts: int) -> tuple[int, int]:
    """``(process, local index)`` of global row or column ``index``."""
    block, within = divmod(int(index), nb)
    return block % parts, (block // parts) * nb + within


@dataclass
class CyclicMatrix:
    """This rank's blocks of a global ``shape`` matrix dealt block-cyclically over ``grid``.

    Attributes
    ----------
    local : ndarray, float64 or complex128, C order
        The rank's blocks, in order: rows ``rows`` and columns ``cols`` of the whole.
    shape : tuple of int
        The global shape ``(M, N)``.
    grid : Grid
    block_size : int
        ``nb``: the blocks are ``nb x nb``.
    """

    local: np.ndarray
    shape: tuple[int, int]
    grid: Grid
    block_size: int
    rows: np.ndarray = field(init=False, repr=False)
    cols: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.local.dtype not in (np.float64, np.complex128):
            raise TypeError(f"the local blocks must be float64 or complex128, got "
                            f"{self.local.dtype}")
        M, N = self.shape
        g, nb = self.grid, self.block_size
        self.rows = cyclic_indices(M, nb, g.P, g.p)
        self.cols = cyclic_indices(N, nb, g.Q, g.q)
        want = (len(self.rows), len(self.cols))
        if self.local.shape != want:
            raise ValueError(f"rank ({g.p}, {g.q}) must hold {want} entries of the {M} x {N} "
                             f"matrix in blocks of {nb}, got {self.local.shape}")


def _block_size(nb) -> int:
    if isinstance(nb, bool) or not isinstance(nb, (int, np.integer)) or nb < 1:
        raise ValueError(f"block_size must be a positive integer, got {nb!r}")
    return int(nb)


def _blocks(shape, grid: Grid, nb: int):
    def block(r: int):
        p, q = divmod(r, grid.Q)
        return (cyclic_indices(shape[0], nb, grid.P, p), cyclic_indices(shape[1], nb, grid.Q, q))
    return block


def scatter_cyclic(A, grid: Grid, block_size: int, root: int = 0) -> CyclicMatrix:
    """Deal the matrix ``A`` held by ``root`` block-cyclically (other ranks pass ``None``).

    Every rank must pass the same ``block_size``; a bad or disagreeing one, or a bad
    ``A``, raises the same error on every rank. Returns this rank's
    :class:`CyclicMatrix` (a copy; ``A`` is not modified).
    """
    comm = grid.comm
    got = {}

    def check():
        nb = _block_size(block_size)
        if comm.Get_rank() == root:
            from ..api.arguments import operand
            got["A"] = np.ascontiguousarray(operand(A, "A"))  # float64 or complex128
        return nb

    nb = agree(comm, check)
    X = got.get("A")
    shape, dtype = comm.bcast((X.shape, X.dtype) if X is not None else None, root=root)
    mine = send_blocks(comm, X, _blocks(shape, grid, nb), root, dtype)
    return CyclicMatrix(mine, tuple(shape), grid, nb)


def gather_cyclic(D: CyclicMatrix, root: int | None = 0) -> np.ndarray | None:
    """The whole matrix on ``root`` (``None`` elsewhere); ``root=None``: on every rank."""
    return assemble(D.grid.comm, D.local, _blocks(D.shape, D.grid, D.block_size), D.shape,
                    root)

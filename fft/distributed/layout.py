"""The layout of a 3-D array over a ``P x Q`` process grid: slabs and pencils.

A global array of shape ``(n0, n1, n2)`` with ``split = (a, b)`` has axis ``a`` cut
over the grid's ``P`` process rows and axis ``b`` over its ``Q`` process columns, in
the even blocks of :func:`ozaki.distributed.bounds` (the first ``n % P`` blocks one
longer); the third axis, ``c``, is *local*: whole on every rank. Rank ``(p, q)`` holds
the C-ordered block ``[block p of a] x [block q of b] x [all of c]`` (indices in the
order of the axes), possibly empty when a grid dimension exceeds the axis length.

* **Pencils** (``P, Q > 1``): every rank holds whole lines along ``c``.
* **Slabs** (``P == 1`` or ``Q == 1``): one cut is trivial, every rank holds whole
  planes; a ``P x 1`` grid with the default ``split = (0, 1)`` cuts axis 0.

The default input layout is ``split = (0, 1)``: lines along axis 2, the axis the
transforms take first. Every rank computes the whole layout from ``(shape, P, Q,
split)``: no communication is needed to find who holds what.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ozaki.distributed.layout import Grid, agree, assemble, bounds, send_blocks

__all__ = ["DistributedArray", "scatter", "gather", "block", "check_split"]


def check_split(split) -> tuple[int, int]:
    """``split`` as two distinct axes of a 3-D array (``ValueError`` otherwise)."""
    try:
        a, b = (operator.index(v) for v in split)
    except (TypeError, ValueError):
        raise ValueError(f"split must be two axes (a, b) of the 3-D array, got {split!r}"
                         ) from None
    if not (0 <= a < 3 and 0 <= b < 3) or a == b:
        raise ValueError(f"split must be two distinct axes in 0, 1, 2, got {split!r}")
    return a, b


def block(shape, P: int, Q: int, split: tuple[int, int], r: int) -> tuple[slice, ...]:
    """Rank ``r``'s index in the whole array (slices with explicit bounds)."""
    p, q = divmod(r, Q)
    index = [slice(0, int(n)) for n in shape]
    for axis, parts, i in ((split[0], P, p), (split[1], Q, q)):
        b = bounds(int(shape[axis]), parts)
        index[axis] = slice(int(b[i]), int(b[i + 1]))
    return tuple(index)


@dataclass
class DistributedArray:
    """This rank's block of a global 3-D array distributed over ``grid`` (module docstring).

    Attributes
    ----------
    local : ndarray, float64 or complex128, C order
        The rank's block (``index`` in the whole).
    shape : tuple of 3 int
        The global shape.
    grid : ozaki.distributed.Grid
    split : tuple of 2 int
        The axes cut over the grid's rows and columns; the third is local.
    """

    local: np.ndarray
    shape: tuple[int, int, int]
    grid: Grid
    split: tuple[int, int] = (0, 1)

    def __post_init__(self):
        self.split = check_split(self.split)
        self.shape = tuple(int(n) for n in self.shape)
        if len(self.shape) != 3 or min(self.shape) < 1:
            raise ValueError(f"shape must be three positive lengths, got {self.shape}")
        self.validate()

    def validate(self) -> None:
        """Check that ``local`` is a float64 or complex128 array (``TypeError`` otherwise)
        of this rank's block shape (``ValueError`` otherwise)."""
        if not isinstance(self.local, np.ndarray) or self.local.dtype not in (np.float64,
                                                                             np.complex128):
            raise TypeError("the local block must be a float64 or complex128 ndarray, got "
                            f"{getattr(self.local, 'dtype', type(self.local).__name__)}")
        want = tuple(s.stop - s.start for s in self.index)
        if self.local.shape != want:
            raise ValueError(f"rank ({self.grid.p}, {self.grid.q}) must hold a {want} block of "
                             f"the {self.shape} array split {self.split}, got "
                             f"{self.local.shape}")

    @property
    def index(self) -> tuple[slice, ...]:
        """This rank's block in the whole array."""
        return block(self.shape, self.grid.P, self.grid.Q, self.split, self.grid.rank)

    @property
    def local_axis(self) -> int:
        """The axis every rank holds whole."""
        return 3 - sum(self.split)

    @property
    def decomposition(self) -> str:
        """``"pencil"``, ``"slab"``, or ``"serial"`` (a ``1 x 1`` grid)."""
        P, Q = self.grid.P, self.grid.Q
        return "serial" if P == Q == 1 else "slab" if min(P, Q) == 1 else "pencil"


def _whole(X) -> np.ndarray:
    """The root's array as float64/complex128 (the errors of :func:`fft.fftn`'s input)."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError("X is a masked array: fill it first (np.ma.filled)")
    arr = np.asarray(X)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"X must be a real or complex numeric array, got dtype {arr.dtype}")
    if arr.dtype.itemsize > (16 if arr.dtype.kind == "c" else 8):
        raise TypeError(f"X has dtype {arr.dtype}: long double is not supported")
    if arr.ndim != 3 or 0 in arr.shape:
        raise ValueError(f"X must be a non-empty 3-D array, got shape {arr.shape}")
    return np.ascontiguousarray(arr, np.complex128 if arr.dtype.kind == "c" else np.float64)


def scatter(X: Any, grid: Grid, split=(0, 1), root: int = 0) -> DistributedArray:
    """Distribute the 3-D array ``X`` held by ``root`` (the others pass ``None``).

    ``X`` is converted to float64 (real) or complex128 (complex; single precision is
    widened, so the transforms return complex128 where serial :mod:`fft` rounds back
    to complex64) and not modified. Every rank must pass the same ``split`` and ``root``;
    a bad ``X`` raises the same error on every rank.

    Returns
    -------
    DistributedArray
        This rank's block (a copy).
    """
    comm = grid.comm
    held = {}

    def check():
        r = operator.index(root)
        if not 0 <= r < comm.Get_size():
            raise ValueError(f"root must be a rank of the grid (0 .. {comm.Get_size() - 1}), "
                             f"got {root!r}")
        if comm.Get_rank() == r:
            held["X"] = _whole(X)
        return check_split(split), r, (grid.P, grid.Q)

    split, _, _ = agree(comm, check)
    A = held.get("X")
    shape, dtype = comm.bcast((A.shape, A.dtype) if A is not None else None, root=root)
    mine = send_blocks(comm, A, lambda r: block(shape, grid.P, grid.Q, split, r), root, dtype)
    return DistributedArray(mine, shape, grid, split)


def gather(D: DistributedArray, root: int | None = 0) -> np.ndarray | None:
    """The whole array on ``root`` (``None`` elsewhere); ``root=None``: on every rank."""
    g = D.grid
    return assemble(g.comm, D.local, lambda r: block(D.shape, g.P, g.Q, D.split, r), D.shape,
                    root)

"""A P x Q process grid, and moving a matrix's blocks between its ranks.

**Grid.** Rank ``r`` of the communicator sits at ``(p, q) = divmod(r, Q)`` (row-major);
``row`` is the communicator of its process row (the ``Q`` ranks with the same ``p``,
ordered by ``q``), ``col`` that of its process column (ordered by ``p``).

The layouts of a matrix over a grid are :mod:`ozaki.distributed.layout` (blocks) and
:mod:`ozaki.distributed.cyclic` (block-cyclic); both scatter and gather with the
point-to-point helpers here, and every distributed call checks its arguments with
:func:`agree` before its first collective.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Grid", "make_grid", "send_blocks", "assemble", "agree", "index"]


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:  # pragma: no cover - exercised where the extra is missing
        raise ImportError("ozaki.distributed needs mpi4py: pip install 'ozaki-emu[mpi]'"
                          ) from None
    return MPI


class Grid:
    """A ``P x Q`` grid over an MPI communicator (see the module docstring).

    Attributes
    ----------
    comm, row, col : mpi4py.MPI.Comm
        The whole grid, this rank's process row, its process column.
    P, Q, p, q : int
    """

    def __init__(self, comm, P: int, Q: int):
        for v, name in ((P, "P"), (Q, "Q")):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if comm.Get_size() != P * Q:
            raise ValueError(f"a {P} x {Q} grid needs {P * Q} processes, the communicator "
                             f"has {comm.Get_size()}")
        self.comm, self.P, self.Q = comm, int(P), int(Q)
        self.p, self.q = divmod(comm.Get_rank(), self.Q)
        self.row = comm.Split(self.p, self.q)
        self.col = comm.Split(self.q, self.p)

    def __repr__(self) -> str:
        return f"Grid({self.P} x {self.Q}, rank ({self.p}, {self.q}))"

    def free(self) -> None:
        """Free the row and column communicators (collective; MPI holds a few thousand).

        A program that makes many grids frees them, or uses one as a context manager:
        ``with make_grid("2x2") as grid: ...``.
        """
        for name in ("row", "col"):
            c = getattr(self, name, None)
            if c is not None:
                c.Free()
                setattr(self, name, None)

    def __enter__(self) -> "Grid":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    @property
    def rank(self) -> int:
        return self.comm.Get_rank()


def make_grid(shape: tuple[int, int] | str | None = None, comm=None) -> Grid:
    """A grid of ``shape`` (``(P, Q)`` or ``"PxQ"``; default: as square as the size allows).

    ``comm`` defaults to ``MPI.COMM_WORLD``. A size that does not fit raises
    ``ValueError`` on every rank (each rank checks the same numbers: no hang).
    """
    MPI = _mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    size = comm.Get_size()
    if shape is None:
        P = max(d for d in range(1, int(size ** 0.5) + 1) if size % d == 0)
        shape = (P, size // P)
    elif isinstance(shape, str):
        try:
            shape = tuple(int(v) for v in shape.lower().split("x"))
        except ValueError:
            raise ValueError(f"grid must look like '2x2', got {shape!r}") from None
        if len(shape) != 2:
            raise ValueError(f"grid must look like '2x2', got {shape!r}")
    P, Q = shape
    return Grid(comm, P, Q)


def _extent(s) -> int:
    return int(s.stop - s.start) if isinstance(s, slice) else len(s)


def index(block: tuple):
    """A block's index into the whole array: its slices, or the open mesh of its index
    arrays (a block-cyclic block, :mod:`ozaki.distributed.cyclic`)."""
    if all(isinstance(s, slice) for s in block):
        return block
    return np.ix_(*(np.arange(s.start, s.stop) if isinstance(s, slice) else s for s in block))


def send_blocks(comm, A: np.ndarray | None, block, root: int, dtype) -> np.ndarray:
    """This rank's block ``A[block(rank)]`` of the array ``A`` held by ``root`` (a copy).

    ``block(r)`` gives rank ``r``'s index as a tuple of slices with explicit bounds or
    increasing index arrays;
    ``dtype`` is ``A``'s (known on every rank). Point-to-point sends from ``root``.
    """
    rank = comm.Get_rank()
    if rank == root:
        for r in range(comm.Get_size()):
            piece = np.ascontiguousarray(A[index(block(r))])
            if r == root:
                mine = piece.copy()
            else:
                comm.Send(piece, dest=r, tag=7)
        return mine
    mine = np.empty(tuple(_extent(s) for s in block(rank)), dtype)
    comm.Recv(mine, source=root, tag=7)
    return mine


def assemble(comm, local: np.ndarray, block, shape: tuple, root: int | None) -> np.ndarray | None:
    """The whole ``shape`` array from the ranks' ``local`` blocks ``block(r)`` (see
    :func:`send_blocks`), on ``root`` (``None`` elsewhere) or, for ``None``, on every rank."""
    from .traffic import gather_blocks
    blocks = gather_blocks(comm, local, root)  # buffers, not pickles: any size
    if blocks is None:
        return None
    out = np.empty(shape, np.result_type(*blocks))
    for r, piece in enumerate(blocks):
        out[index(block(r))] = piece
    return out


def agree(comm, check) -> Any:
    """The same verdict on every rank, before any other collective.

    Each rank runs ``check()``, which validates its own arguments and returns what
    the ranks must agree on (a picklable, comparable value), or raises. The ranks
    then compare: a ``TypeError`` or ``ValueError`` anywhere is raised everywhere
    (the rank's own, or the first failing rank's); any other exception is re-raised
    where it happened and raised as ``RuntimeError`` (naming it) on the other ranks;
    ranks that were given different things raise ``ValueError`` -- so no rank waits
    in a collective the others skipped. Returns the agreed value.
    """
    error, mine = None, None
    try:
        mine = check()
    except Exception as exc:  # every rank must hear of it, whatever it is
        error = exc
    every = comm.allgather((None if error is None else (type(error), str(error)), mine))
    errors = [e for e, _ in every if e is not None]
    if errors:
        if error is not None:
            raise error
        kind, text = errors[0]
        if issubclass(kind, (TypeError, ValueError)):
            raise kind(text)
        raise RuntimeError(f"another rank failed its argument check: {kind.__name__}: {text}")
    if any(m != every[0][1] for _, m in every):
        raise ValueError("the ranks disagree on the global shapes, grids or options: "
                         f"{sorted({repr(m) for _, m in every})}")
    return every[0][1]

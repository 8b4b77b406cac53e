"""What the distributed factorisations share: a call's record (:class:`Run`), argument
checks agreed on every rank, and the right-hand sides' layout for the solves."""

from __future__ import annotations

import hashlib
import time

import numpy as np

from ..api.calls import options as resolve_options
from ..api.front import scaled_sum
from ..core.kind import REAL
from ..core.pipeline import Options
from ..linalg.info import Recorder, result
from .cyclic import CyclicMatrix, cyclic_indices
from .grid import agree
from .traffic import Traffic, gather_blocks
from .update import Blocks, product

__all__ = ["Blocks", "Run", "agree_factor", "allgather_lines", "allgather_columns",
           "ensure_rhs"]


class Run:
    """One call's recorder (:class:`~ozaki.linalg.LinalgInfo` with a ``communication``
    phase), its traffic and product options; ``native``: the updates by the BLAS (the
    baselines of the HPL benchmark)."""

    def __init__(self, routine: str, shape: tuple, nb: int, opts: Options, popts: dict,
                 native: bool = False):
        self.rec = Recorder(routine, shape, nb, popts)
        self.rec.info.seconds["communication"] = 0.0
        self.tr = Traffic()
        self.opts, self.native = opts, native

    def comm(self, f, *args):
        """``f(*args)``, timed as communication."""
        t = time.perf_counter()
        out = f(*args)
        self.rec.info.seconds["communication"] += time.perf_counter() - t
        return out

    def update(self, C: np.ndarray, L: np.ndarray, U: np.ndarray, rows, cols, shape,
               blocks) -> None:
        """``C <- fl(C - L U)`` in place, with the bits of serial
        ``ozaki.gemm(L, U, C, alpha=-1, beta=1)`` at these entries of the whole update
        of ``shape`` (:func:`ozaki.distributed.update.product`)."""
        info = self.rec.info
        t = time.perf_counter()
        if self.native:
            np.subtract(C, L @ U, out=C)
            path = "native"
        else:
            X, inf = product(L, U, rows, cols, shape, blocks, self.opts, REAL, self.tr)
            scaled_sum(X, -1.0, 1.0, C, C)
            path = inf.path
        dt = time.perf_counter() - t
        info.seconds["updates"] += dt
        info.products += 1
        if path == "compensated":
            info.compensated_products += 1
        elif path != "native":
            info.emulated_products += 1
            info.emulated_seconds += dt

    def finish(self, value, return_info: bool):
        """``value``, with the info (its ``traffic`` set) when asked."""
        out = result(value, self.rec, return_info)
        if return_info:
            out[-1].traffic = self.tr
        return out


def _matrix(x, name: str, check_finite: bool) -> None:
    """This rank's checks of a :class:`CyclicMatrix` argument."""
    if not isinstance(x, CyclicMatrix):
        raise TypeError(f"{name} must be an ozaki.distributed.CyclicMatrix (scatter with "
                        f"block_size), got {type(x).__name__}")
    if x.local.dtype != np.float64:
        raise TypeError(f"{name} must be float64: complex matrices are not distributed yet "
                        f"(use ozaki.linalg on the whole matrix)")
    if check_finite and not np.isfinite(x.local).all():
        raise ValueError(f"{name} must not contain infs or NaNs")


def agree_factor(routine: str, a, check_finite: bool, product_options: dict, *,
                 square: bool = False, b=None, piv=None, trans=0,
                 name: str = "a") -> tuple[Options, dict]:
    """Check the arguments on every rank and agree on them before any other collective.

    ``a`` (and for a solve ``b``, ``piv``, ``trans``) and the product options; each rank
    checks its own, then :func:`~ozaki.distributed.grid.agree` compares them (global
    shapes, grids, block sizes, options, the scheme and engine each rank resolved, the
    pivots' bytes): an error anywhere is raised everywhere. Returns the resolved
    product :class:`~ozaki.core.pipeline.Options` and the options as given.
    """
    if not isinstance(a, CyclicMatrix):  # no communicator to agree on
        _matrix(a, name, check_finite)
    from ..linalg.arguments import product_options as check_options
    got = {}

    def check():
        _matrix(a, name, check_finite)
        popts = check_options(routine, product_options)
        opts = resolve_options(popts.get("scheme", "auto"), popts.get("num_moduli", "auto"),
                               popts.get("mode", "accurate"), popts.get("engine", "auto"),
                               popts.get("fallback"), False)
        got["opts"], got["popts"] = opts, popts
        facts = [a.shape, (a.grid.P, a.grid.Q), a.block_size,
                 repr(sorted((k, str(v)) for k, v in popts.items())), opts.scheme,
                 opts.engine.name, opts.backend.name]
        if square or b is not None:
            if a.shape[0] != a.shape[1]:
                raise ValueError(f"{name} must be a square matrix, got shape {a.shape}")
        if b is not None:
            from ..linalg.arguments import trans_of
            if isinstance(trans, bool):
                raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
            facts.append(trans_of(trans))
            _matrix(b, "b", check_finite)
            if b.grid.comm is not a.grid.comm or b.block_size != a.block_size:
                raise ValueError(f"b must be dealt on {name}'s grid with {name}'s block size")
            if b.shape[0] != a.shape[0]:
                raise ValueError(f"shapes of {name} {a.shape} and b {b.shape} are "
                                 f"incompatible")
            if piv is not None:
                p = np.asarray(piv)
                if p.shape != (a.shape[0],) or p.dtype.kind not in "iu":
                    raise ValueError(f"piv must be an integer array of shape "
                                     f"{(a.shape[0],)}, got {p.dtype} {p.shape}")
                if p.size and (p.min() < 0 or p.max() >= a.shape[0]):
                    raise ValueError("piv must hold row indices of lu")
                facts.append(hashlib.sha256(p.astype(np.int64).tobytes()).hexdigest())
            facts += [b.shape, b.block_size]
        return tuple(facts)

    agree(a.grid.comm, check)
    return got["opts"], got["popts"]


def allgather_lines(comm, part: np.ndarray, axis: int, size: int, nb: int, tr: Traffic,
                    kind: str, first: int = 0) -> np.ndarray:
    """The lines ``first..size`` along ``axis`` of a block-cyclic matrix whose ranks of
    ``comm`` (rank ``i`` holding the lines ``cyclic_indices(size, nb, comm size, i)``)
    pass their lines ``>= first`` as ``part``: joined in global order on every rank of
    ``comm`` (a new array; counted as ``kind`` in ``tr``)."""
    pieces = gather_blocks(comm, np.ascontiguousarray(part), None)
    s = comm.Get_size()
    tr.add(kind, part.nbytes * (s - 1), s - 1)
    shape = list(part.shape)
    shape[axis] = size - first
    whole = np.empty(shape, part.dtype)
    for i, piece in enumerate(pieces):
        idx = cyclic_indices(size, nb, s, i)
        where = idx[idx >= first] - first
        if axis == 0:
            whole[where] = piece
        else:
            whole[:, where] = piece
    return whole


def allgather_columns(b: CyclicMatrix, tr: Traffic) -> np.ndarray:
    """This rank's rows of ``b`` with every column, in global order (a new C-ordered array,
    the same on each rank of the process row)."""
    return allgather_lines(b.grid.row, b.local, 1, b.shape[1], b.block_size, tr, "rhs")


def ensure_rhs(b: CyclicMatrix, X: np.ndarray, overwrite_b: bool) -> CyclicMatrix:
    """The solution's columns of this rank, dealt as ``b`` (in ``b.local`` if ``overwrite_b``)."""
    mine = X[:, b.cols]
    if overwrite_b:
        b.local[...] = mine
        return b
    return CyclicMatrix(np.ascontiguousarray(mine), b.shape, b.grid, b.block_size)

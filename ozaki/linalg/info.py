"""What one ``ozaki.linalg`` call did: :class:`LinalgInfo`, and the recorder that fills it."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

__all__ = ["LinalgInfo", "PHASES"]

#: The phases of a factorisation or solve, in :attr:`LinalgInfo.seconds`.
PHASES = ("panel", "triangular", "updates", "other")


@dataclass
class LinalgInfo:
    """Time per phase of one ``ozaki.linalg`` call (``return_info=True``).

    Attributes
    ----------
    routine : str
        The public function called (``"lu_factor"``, ``"solve"``, ...).
    shape : tuple of int
        Shape of the matrix factored or solved with.
    block_size : int
    seconds : dict
        Wall time per phase: ``panel`` (unblocked factorisation of the panels or
        diagonal blocks, deterministic compiled kernels), ``triangular`` (the small
        triangular solves on the diagonal blocks), ``updates`` (every
        product, through :func:`ozaki.gemm`), ``other`` (checks, copies, row
        interchanges).
    total_seconds : float
    products : int
        Calls of :func:`ozaki.gemm`.
    emulated_products, compensated_products : int
        Those that ran Ozaki Scheme II, and those that took the small-product
        path (compensated dot products, ``info.path == "compensated"``).
    emulated_seconds : float
        Time in the emulated products (a part of ``seconds["updates"]``).
    options : dict
        The product options passed through to :func:`ozaki.gemm`.
    """

    routine: str
    shape: tuple
    block_size: int
    seconds: dict = field(default_factory=lambda: {p: 0.0 for p in PHASES})
    total_seconds: float = 0.0
    products: int = 0
    emulated_products: int = 0
    compensated_products: int = 0
    emulated_seconds: float = 0.0
    options: dict = field(default_factory=dict)

    @property
    def emulated_share(self) -> float:
        """Share of the total time spent in emulated products (0 when nothing ran)."""
        return self.emulated_seconds / self.total_seconds if self.total_seconds > 0 else 0.0

    @property
    def update_share(self) -> float:
        """Share of the total time spent in products (emulated or compensated)."""
        return self.seconds["updates"] / self.total_seconds if self.total_seconds > 0 else 0.0


class Recorder:
    """Times the phases of one call and runs its products (``A22 - A21 A12``)."""

    def __init__(self, routine: str, shape: tuple, block_size: int, options: dict):
        self.info = LinalgInfo(routine, tuple(int(s) for s in shape), block_size,
                               options=dict(options))
        self._start = time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            with np.errstate(all="ignore"):  # IEEE results as LAPACK's, silently
                yield
        finally:
            self.info.seconds[name] += time.perf_counter() - t

    def update(self, C: np.ndarray, A: np.ndarray, B: np.ndarray, *,
               trans_b: bool | str = False, out: np.ndarray | None = None) -> np.ndarray:
        """``C - op(A) op(B)`` (``op(B)``: ``B.T`` with ``trans_b`` True or ``"T"``,
        ``B^H`` with ``"C"``): a new array, or ``out`` (which may be ``C``, not ``A``
        or ``B``), the bits of ``fl(C - X)`` with ``X`` the FP64-grade product, which
        depend only on ``A``, ``B`` and the options.

        Real operands: one :func:`ozaki.gemm` call with ``alpha=-1, beta=1`` (its result
        is ``fl(fl(-X) + C) = fl(C - X)``). Complex ones: the complex product ``X``
        (:func:`ozaki.gemm` on complex operands runs :func:`ozaki.zgemm`'s), then
        ``C - X`` part by part (one rounding each): subtracting directly rather than
        through ``alpha=-1`` keeps the complex scaling ``(-1 + 0i) X``, where
        ``inf * 0`` would make a NaN, out of the update.
        """
        tb = "T" if trans_b is True else ("N" if trans_b is False else trans_b)
        if np.iscomplexobj(A) or np.iscomplexobj(B) or np.iscomplexobj(C):
            X = self.product(A, B, trans_b=tb)  # a fresh array: the difference goes there
            return np.subtract(C, X, out=X if out is None else out)
        return self.product(A, B, C, alpha=-1.0, beta=1.0, trans_b=tb, out=out)

    def product(self, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None, *,
                alpha: float | complex = 1.0, beta: float | complex = 0.0,
                trans_b: str = "N", out: np.ndarray | None = None) -> np.ndarray:
        """One timed and counted :func:`ozaki.gemm` call ``alpha A op(B) + beta C``
        (into ``out`` when given)."""
        from ..api.front import gemm
        t = time.perf_counter()
        X, inf = gemm(A, B, C, alpha=alpha, beta=beta, trans_b=trans_b, out=out,
                      return_info=True, **self.info.options)
        dt = time.perf_counter() - t
        self.info.seconds["updates"] += dt
        self.info.products += 1
        if inf.path == "compensated":
            self.info.compensated_products += 1
        else:
            self.info.emulated_products += 1
            self.info.emulated_seconds += dt
        return X

    def finish(self) -> LinalgInfo:
        info = self.info
        info.total_seconds = time.perf_counter() - self._start
        known = sum(v for k, v in info.seconds.items() if k != "other")
        info.seconds["other"] = max(0.0, info.total_seconds - known)
        return info


def result(value: Any, rec: Recorder, return_info: bool):
    """``value`` (a tuple is extended), followed by the info when asked."""
    if not return_info:
        return value
    info = rec.finish()
    return (*value, info) if isinstance(value, tuple) else (value, info)

"""What the host backends (``cpu``, ``numpy``) share: numpy operands and the host engines."""

from __future__ import annotations

import numpy as np

from ..core.backend import Operand
from ..core.engine import Engine
from .engines import ENGINES, BlasEngine, get_engine

__all__ = ["HostEngines"]


class HostEngines:
    """The engine and operand methods of :class:`ozaki.core.backend.Backend` for backends
    whose arrays are numpy arrays and whose exact products run on
    :mod:`ozaki.backends.engines`."""

    xp = np

    def engine(self, engine: str | Engine | None, scheme: str | None) -> Engine:
        """Resolve ``engine`` for ``scheme`` (``None``: the engine's preferred one)."""
        return get_engine(engine, scheme)

    def engine_names(self) -> list[str]:
        """The host engines available on this machine."""
        return [name for name, cls in ENGINES.items() if cls().available()]

    def exact_engine(self) -> Engine:
        """FP64 BLAS, the engine of the refinement's bound GEMMs (exact to ``2**53``)."""
        return BlasEngine()

    def matmul(self, engine: Engine, X: np.ndarray, Y: np.ndarray, amax: int, bmax: int,
               out: np.ndarray | None) -> np.ndarray:
        """Exact ``out = X @ Y`` by ``engine`` (:meth:`ozaki.core.engine.Engine.matmul`)."""
        return engine.matmul(X, Y, amax, bmax, out=out)

    def operand(self, X: np.ndarray, outer: int) -> Operand:
        """``X`` (b, r, c) float64 as an :class:`~ozaki.core.backend.Operand`."""
        return Operand(X, outer)

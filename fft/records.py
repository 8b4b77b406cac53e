"""Per-stage reporting on request: :func:`stage_records`."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar

__all__ = ["stage_records", "record"]

_active: ContextVar[list | None] = ContextVar("fft_stage_records", default=None)


@contextlib.contextmanager
def stage_records():
    """Collect a :class:`~fft.plan.StageRecord` for every stage run inside the block.

    Yields
    ------
    list of StageRecord
        Filled as stages run (Bluestein's inner transforms included), in order.

    Examples
    --------
    >>> import numpy as np, fft
    >>> with fft.stage_records() as stages:
    ...     _ = fft.fft(np.ones(64 * 32))
    >>> [s.radix for s in stages]
    [32, 64]
    """
    records: list = []
    token = _active.set(records)
    try:
        yield records
    finally:
        _active.reset(token)


def record(rec) -> None:
    """Append ``rec`` to the active collection, if any."""
    got = _active.get()
    if got is not None:
        got.append(rec)

"""Helpers of the scripts run under ``mpiexec`` (imported from their own folder)."""

import sys
import time

import numpy as np


def same(a, b) -> bool:
    """Bitwise equality (NaN payloads and signs of zero included)."""
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def raises(kind, text, f) -> None:
    """``f()`` raises ``kind`` with ``text`` in its message (on this rank)."""
    try:
        f()
    except kind as exc:
        assert text in str(exc), (text, str(exc))
    else:
        raise AssertionError(f"no {kind.__name__} ({text})")


def _abort(kind, value, tb):
    """An uncaught error on one rank ends the job (the others would wait forever)."""
    import traceback

    from mpi4py import MPI
    traceback.print_exception(kind, value, tb)
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = _abort


def idle_barrier(comm, poll: float = 0.005) -> None:
    """A barrier that sleeps while it waits (MPICH's spins, taking a core from the
    ranks still at work)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll)

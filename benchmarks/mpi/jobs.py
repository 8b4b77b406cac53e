"""What the MPI benchmarks share: sweeps over sub-communicators, their metadata, errors.

Each benchmark runs its cases on the first ``r`` ranks of ``COMM_WORLD`` (a
sub-communicator), the other ranks waiting asleep (:func:`idle_barrier`: MPICH's own
barrier spins and would take the cores from the ranks at work), with a progress bar
on rank 0.  :class:`RankParser` parses the command line on every rank and lets rank 0
alone print ``--help`` and usage errors.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["PROFILE", "RankParser", "abort_on_error", "idle_barrier", "meta", "sweep"]

#: The calibration profile the predictions use by default.
PROFILE = Path(__file__).resolve().parents[2] / "docs" / "_generated" / "tme_profile.json"


class RankParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose messages only rank 0 of ``comm``
    (default ``COMM_WORLD``) prints.

    Every rank parses the same command line, so every rank reaches the same result, or
    exits alike (``--help``: status 0, a usage error: 2); the help text and the error
    message appear once, not once per rank.
    """

    def __init__(self, *args, comm=None, **kwargs):
        super().__init__(*args, **kwargs)
        if comm is None:
            from mpi4py import MPI
            comm = MPI.COMM_WORLD
        self.quiet = comm.Get_rank() != 0

    def print_usage(self, file=None) -> None:
        if not self.quiet:
            super().print_usage(file)

    def print_help(self, file=None) -> None:
        if not self.quiet:
            super().print_help(file)

    def exit(self, status: int = 0, message: str | None = None):
        super().exit(status, None if self.quiet else message)


def idle_barrier(comm, poll: float = 0.005) -> None:
    """A barrier that sleeps while it waits: MPICH's blocking one spins, and ranks left
    out of a sweep's smaller runs would take the cores from the ranks that run."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll)


def sweep(world, cases, run, desc: str, label) -> list:
    """``run(sub, case)`` for each ``(ranks, case)`` of ``cases`` on the first ``ranks``
    ranks of ``world``; the records it returns (rank 0's), in order.

    ``label(case)`` gives the progress bar's postfix (a dict).
    """
    from mpi4py import MPI

    rank = world.Get_rank()
    bar = None
    if rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=len(cases), desc=desc, unit="case")
    runs = []
    for r, case in cases:
        idle_barrier(world)
        sub = world.Split(0 if rank < r else MPI.UNDEFINED, rank)
        if sub != MPI.COMM_NULL:
            runs += run(sub, case) or []
            sub.Free()
        if bar:
            bar.update()
            bar.set_postfix(**label(case))
    idle_barrier(world)
    if bar:
        bar.close()  # its last line ends with a newline, on stderr ...
        sys.stderr.flush()
        # ... which mpiexec forwards apart from stdout: give it time to arrive before
        # rank 0 prints its results, or the first of them lands on the bar's line
        time.sleep(0.25)
    return runs


def meta(net, net_rec, profile: str, **fields) -> dict:
    """The run's metadata: ``fields``, one thread per rank, the network and profile."""
    return {**fields, "threads_per_rank": 1,
            "network": {"key": net.key, "alpha_s": net.alpha_s, "beta_bps": net.beta_bps,
                        "source": net.source},
            "network_calibration": net_rec, "profile": profile,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def abort_on_error(f):
    """Run ``f``; an exception on any rank aborts the job (the others would wait forever)."""
    try:
        return f()
    except SystemExit:
        raise
    except BaseException:
        import traceback

        from mpi4py import MPI
        traceback.print_exc()
        MPI.COMM_WORLD.Abort(1)

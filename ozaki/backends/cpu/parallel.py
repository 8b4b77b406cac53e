"""The passes' threads: a pool of ozaki's own, safe across ``fork`` and for concurrent callers.

Every compiled pass is a serial numba function that releases the GIL
(``nogil=True``) and works on a range ``[t0, t1)`` of its tasks (rows, chunks
of columns, tiles); :func:`run` cuts a pass's tasks into one contiguous range
per thread and runs them on the calling thread and on this module's pool.
Each output entry is written by one task, in a fixed order, so the bits do not
depend on the thread count nor on the cut.

Why not numba's ``parallel=True``: its threading layer is a process-wide
choice, and none fits a library.

* ``omp`` (numba's default on Linux, GNU OpenMP) aborts a process forked after
  a parallel region as soon as the child enters one ("fork() called from a
  process already using GNU OpenMP"): a ``multiprocessing`` or joblib worker
  that calls ozaki dies and its pool waits forever.
* ``workqueue`` survives ``fork`` but aborts when two Python threads enter it
  at once, and ``tbb`` needs a binary package beside numba.
* Choosing a layer at all chooses it for the user's own numba code too, and
  the OpenMP wait policy could only be set through ``os.environ``.

The pool here is plain Python threads (:class:`concurrent.futures.ThreadPoolExecutor`):
idle workers block, so they take no core from the BLAS threads that run next; a
child process forked from a parent that used it starts a fresh pool at its
first pass (:func:`os.register_at_fork`); calls from several Python threads
share the pool and run their passes at the same time, each call's tasks its
own (no lock). A caller always runs the first range itself, so a call finishes
even while other callers keep every worker busy.

The thread count is :func:`threads`: ``numba.config.NUMBA_NUM_THREADS`` (the
``NUMBA_NUM_THREADS`` environment variable, else the CPU count), lowered for
the calling thread only by :func:`limit`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ...core.scope import scoped

__all__ = ["run", "threads", "limit", "default_threads"]

_local = threading.local()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def default_threads() -> int:
    """Threads a pass uses unless :func:`limit` says fewer: numba's configured count."""
    import numba  # the configuration only: nothing is launched
    return max(1, int(numba.config.NUMBA_NUM_THREADS))


def threads() -> int:
    """Threads the calling thread's passes may use (:func:`limit`, else :func:`default_threads`)."""
    n = getattr(_local, "threads", None)
    return default_threads() if n is None else n


def limit(n: int) -> contextlib.AbstractContextManager:
    """Run the calling thread's passes on at most ``n >= 1`` threads inside the block.

    Local to the calling thread (other threads keep their own count); restored
    on exit. The bits do not depend on ``n``.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    return scoped(_local, "threads", n)


def _workers(n: int) -> ThreadPoolExecutor:
    """The pool, with at least ``n`` workers (made at first use, and anew after a fork).

    A larger request replaces it; the old pool is not shut down (another caller may
    be about to submit to it): it finishes what it was given, and its idle threads
    exit once nobody holds it.
    """
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < n:
            _pool, _pool_size = ThreadPoolExecutor(n, thread_name_prefix="ozaki-pass"), n
        return _pool


def _after_fork_in_child() -> None:
    """A forked child has only the forking thread: forget the parent's pool and lock."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size = None, 0
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def run(kernel: Callable, tasks: int, *args, max_threads: int | None = None) -> None:
    """``kernel(t0, t1, *args)`` over the tasks ``[0, tasks)``, one contiguous range per thread.

    ``kernel`` must be compiled ``nogil`` and write each output entry from one
    task only. Ranges go to at most :func:`threads` threads (and at most
    ``max_threads``), the first on the calling thread; every range has finished when this
    returns (the first exception, if any, is raised after all have).
    """
    parts = min(threads(), tasks, max_threads or tasks)
    if parts <= 1:
        if tasks > 0:
            kernel(0, tasks, *args)
        return
    edges = [tasks * i // parts for i in range(parts + 1)]
    pool = _workers(parts - 1)
    futures = [pool.submit(kernel, edges[i], edges[i + 1], *args) for i in range(1, parts)]
    try:
        kernel(edges[0], edges[1], *args)
    finally:
        for f in futures:  # wait for every range before any error propagates
            f.exception()
    for f in futures:
        f.result()

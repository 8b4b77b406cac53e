"""Scheme facts, engines, option checking and the worker scope: what other packages read.

:mod:`fft`, :mod:`tme_model`, :mod:`validation` and the benchmarks use these (and
the products) only, never ozaki's internal modules.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from ..backends.cpu import parallel
from ..backends import get_backend
from ..backends.engines import pin_scheme, pinned_scheme
from ..core import compensated
from ..core.backend import Backend
from ..core.engine import Engine
from ..core.moduli import MODULI, SCHEMES
from ..core.products import gemms_per_modulus as _per_modulus
from .arguments import check_choice, resolve

__all__ = ["Resolved", "resolve_options", "available_engines", "get_engine", "moduli",
           "gemms_per_modulus",
           "set_workers", "get_workers", "set_small_products", "set_scheme", "get_scheme",
           "emulated_options"]


class Resolved(NamedTuple):
    """Options as a call resolves them (:func:`resolve_options`)."""

    scheme: str
    num_moduli: int | str
    mode: str
    engine: Engine


def resolve_options(scheme: str = "auto", num_moduli: int | str = "auto",
                    mode: str = "accurate", engine: str | Engine | None = "auto",
                    backend: str | Backend | None = None) -> Resolved:
    """Check ``scheme``, ``num_moduli``, ``mode`` and ``engine`` as :func:`ozaki.dgemm` does.

    Raises the errors a product would raise with these options; returns them
    resolved (``scheme="auto"`` becomes the engine's preferred scheme, ``engine``
    an :class:`~ozaki.core.engine.Engine`).

    Examples
    --------
    >>> import ozaki
    >>> ozaki.resolve_options(engine="cpu-int8").scheme
    'int8'
    """
    return Resolved(*resolve(scheme, num_moduli, mode, engine, get_backend(backend)))


def available_engines(backend: str | Backend | None = None) -> list[str]:
    """Names of the engines ``backend`` runs on this machine (default: the calling
    thread's backend, :func:`ozaki.set_backend`).

    Examples
    --------
    >>> import ozaki
    >>> "cpu-blas" in ozaki.available_engines()
    True
    """
    return get_backend(backend).engine_names()


def get_engine(engine: str | Engine | None = "auto", scheme: str | None = None,
               backend: str | Backend | None = None) -> Engine:
    """The engine ``engine`` of ``backend`` (default: the thread's), checked to run ``scheme``.

    Parameters
    ----------
    engine : str or Engine, optional
        A name of :func:`ozaki.available_engines`, ``"auto"`` or ``None``
        (``cpu-blas``), or an :class:`ozaki.Engine` (returned as is).
    scheme : str, optional
        A scheme the engine must run (``None``: no check).
    backend : str or Backend, optional
        Whose engines (a backend owns its engines; both host backends run
        :mod:`ozaki.backends.engines`).

    Returns
    -------
    Engine

    Raises
    ------
    ValueError
        An unknown or unavailable engine, or one that does not run ``scheme``.
    """
    return get_backend(backend).engine(engine, scheme)


def moduli(scheme: str) -> tuple[int, ...]:
    """The moduli of ``scheme`` in the order a product uses them (its first ``N``).

    Parameters
    ----------
    scheme : {"int8", "fp8", "fp64", "int7"}

    Returns
    -------
    tuple of int
        Pairwise coprime, the count a scheme allows at most (``MODULI_VERSION``'s tables).

    Examples
    --------
    >>> import ozaki
    >>> ozaki.moduli("int8")[:3]
    (256, 255, 253)
    """
    if scheme not in MODULI:
        raise ValueError(f"scheme must be one of {', '.join(MODULI)}, got {scheme!r}")
    return tuple(int(p) for p in MODULI[scheme])


def gemms_per_modulus(scheme: str, engine: str | Engine | None = "auto") -> int:
    """Exact GEMMs one modular product of ``scheme`` takes on ``engine`` (full ``k``).

    Parameters
    ----------
    scheme : {"int8", "fp8", "fp64", "int7"}
    engine : str or Engine, optional
        As for :func:`get_engine` (it must run ``scheme``; the thread's backend's).

    Returns
    -------
    int
        1 where the engine multiplies the residues directly, 3 where they are split
        into FP8 digits; the same for every modulus of the scheme.
    """
    residues = moduli(scheme)  # checks the scheme first
    eng = get_engine(engine, scheme)
    counts = {_per_modulus(eng, p) for p in residues}
    if len(counts) != 1:  # pragma: no cover - no such engine today
        raise ValueError(f"GEMMs per modulus of {scheme} vary on {eng.name}: {sorted(counts)}")
    return counts.pop()


def set_workers(workers: int) -> contextlib.AbstractContextManager:
    """Run the calling thread's ozaki passes on at most ``workers`` threads in the block.

    A context manager in the style of :func:`scipy.fft.set_workers`: local to the
    calling thread (other threads keep their own count), restored on exit. The
    bits do not depend on it.

    Parameters
    ----------
    workers : int
        At least 1 (checked now: ``ValueError``).

    Returns
    -------
    context manager

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> with ozaki.set_workers(1):
    ...     C = ozaki.dgemm(np.eye(2), np.eye(2))
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    return parallel.limit(workers)


def set_small_products(enabled: bool) -> contextlib.AbstractContextManager:
    """Let small products take the compensated path (``True``, the default) or run the
    emulation (``False``) on the calling thread, inside the block.

    A small product (at most ``2**24`` terms, ``num_moduli="auto"``, unprepared
    operands) is computed by compensated dot products that meet the same bound
    (:mod:`ozaki.core.compensated`); ``False`` measures or validates the emulation
    itself there. Local to the calling thread, restored on exit.

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> with ozaki.set_small_products(False):
    ...     C, info = ozaki.dgemm(np.eye(4), np.eye(4), return_info=True)
    >>> info.path
    'emulated'
    """
    return compensated.enabled(enabled)


def set_scheme(scheme: str) -> contextlib.AbstractContextManager:
    """Pin the scheme of the calling thread's calls that leave ``scheme`` and ``engine``
    at ``"auto"``, inside the block: the same bits on every machine.

    Left to themselves, those calls take the machine's fastest certified path
    (:func:`ozaki.backends.engines.machine_scheme`): the ``int8`` scheme on
    ``cpu-onednn`` where oneDNN runs VNNI or AMX kernels; where it runs without VNNI,
    the ``int7`` scheme on ``cpu-onednn`` in fast mode and the ``fp64`` scheme in
    accurate mode; without oneDNN the ``fp64`` scheme on ``cpu-blas``. All are FP64
    grade, but their bits differ, so results would differ between machines. Inside the block they run ``scheme`` on the fastest engine that
    runs it (a scheme's bits never depend on the engine). Calls that name a scheme or
    an engine are unaffected, and so are :mod:`fft`, :mod:`ozaki.linalg` and
    :mod:`ozaki.distributed` calls that pass one. Local to the calling thread,
    restored on exit.

    Parameters
    ----------
    scheme : {"int8", "fp8", "fp64", "int7"}

    Returns
    -------
    context manager

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> with ozaki.set_scheme("fp64"):
    ...     C, info = ozaki.dgemm(np.ones((300, 300)), np.ones((300, 300)), return_info=True)
    >>> info.scheme
    'fp64'
    """
    check_choice(scheme, "scheme", SCHEMES)
    return pin_scheme(scheme)


def get_scheme() -> str | None:
    """The scheme :func:`set_scheme` pins on the calling thread, or ``None`` outside
    its blocks (calls then take the machine's choice).

    Examples
    --------
    >>> import ozaki
    >>> with ozaki.set_scheme("fp8"):
    ...     ozaki.get_scheme()
    'fp8'
    >>> ozaki.get_scheme() is None
    True
    """
    return pinned_scheme()


def emulated_options(scheme: str, m: int, k: int, n: int, complex_: bool = False) -> dict:
    """Keyword arguments that make a product of this shape run the emulation.

    Parameters
    ----------
    scheme : {"int8", "fp8", "fp64", "int7"}
    m, k, n : int
        The product's shape, (m, k) @ (k, n).
    complex_ : bool
        A complex product (its work and inner dimension are the real embedding's).

    Returns
    -------
    dict
        ``{}`` where ``num_moduli="auto"`` already runs the emulation; on a small
        product, the count ``"auto"`` starts from (:func:`ozaki.auto_num_moduli`),
        given explicitly, with the exact fallback (the same contract). For
        measurements of the emulation at an explicit count (the TME model's
        calibration, the SUMMA benchmark).
    """
    return compensated.emulated_options(scheme, m, k, n, complex_)


def get_workers() -> int:
    """Threads the calling thread's passes may use now (:func:`set_workers`, else all)."""
    return parallel.threads()

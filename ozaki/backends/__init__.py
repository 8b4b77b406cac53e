"""Backends: what runs the passes and the exact products of :mod:`ozaki.core`.

``cpu`` (numba passes on ozaki's own threads, the host engines) and ``numpy``
(the reference: pure NumPy, written from the maths, slow). Both give the same bits.
"""

from __future__ import annotations

import contextlib
import importlib
import threading

from typing import TYPE_CHECKING

from ..core.scope import scoped

if TYPE_CHECKING:  # pragma: no cover
    from ..core.backend import Backend

__all__ = ["get_backend", "available_backends", "set_backend"]

#: Registry: name -> (module, class). Imported at first use (``import ozaki`` stays light).
_REGISTRY = {"cpu": ("ozaki.backends.cpu.backend", "CPUBackend"),
             "numpy": ("ozaki.backends.numpy.backend", "NumPyBackend")}
_MADE: dict = {}
_local = threading.local()  # the calling thread's default (set_backend)


def available_backends() -> list[str]:
    """Names of the registered backends (``"cpu"``, the default, and ``"numpy"``).

    Examples
    --------
    >>> import ozaki
    >>> ozaki.available_backends()
    ['cpu', 'numpy']
    """
    return list(_REGISTRY)


def get_backend(backend: "str | Backend | None" = None) -> "Backend":
    """The backend for ``backend``: a registered name, an object that implements
    :class:`ozaki.core.backend.Backend` (returned as is), or ``None``: the calling
    thread's default (:func:`set_backend`, else ``"cpu"``)."""
    if backend is None:
        backend = getattr(_local, "default", None)
        if backend is None:
            backend = "cpu"
    if isinstance(backend, str):
        if backend not in _REGISTRY:
            raise ValueError(f"backend must be one of {available_backends()} or a backend "
                             f"object, got {backend!r}")
        got = _MADE.get(backend)
        if got is None:
            module, cls = _REGISTRY[backend]
            got = _MADE.setdefault(backend, getattr(importlib.import_module(module), cls)())
        return got
    from ..core.backend import Backend
    if not isinstance(backend, Backend):
        needed = set(getattr(Backend, "__annotations__", {})) | {
            name for name, v in vars(Backend).items() if callable(v) and not name.startswith("_")}
        missing = [name for name in needed if not hasattr(backend, name)]
        raise TypeError(f"backend must be one of {available_backends()} or an object "
                        f"implementing ozaki.core.backend.Backend, got {type(backend).__name__}"
                        + (f" (missing {', '.join(sorted(missing))})" if missing else ""))
    return backend


def set_backend(backend: "str | Backend") -> contextlib.AbstractContextManager:
    """Make ``backend`` (a name or a backend object) the default of the calling thread's
    products in the block, in the style of :func:`scipy.fft.set_backend`.

    Calls that name a backend (``backend=``) use theirs. Local to the calling thread,
    restored on exit; the bits are the same on every backend.

    Parameters
    ----------
    backend : str or Backend
        A name of :func:`available_backends` or an object implementing
        :class:`ozaki.core.backend.Backend` (checked now: ``ValueError`` or
        ``TypeError``).

    Returns
    -------
    context manager

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> with ozaki.set_backend("numpy"):
    ...     C = ozaki.dgemm(np.eye(2), np.eye(2))
    """
    return scoped(_local, "default", get_backend(backend))

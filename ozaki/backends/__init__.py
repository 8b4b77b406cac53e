"""Backends: what runs the passes and the exact products of :mod:`ozaki.core`.

``cpu`` (numba passes on ozaki's own threads, the host engines) and ``numpy``
(the reference: pure NumPy, written from the maths, slow). Both give the same bits.
"""

from __future__ import annotations

import importlib

__all__ = ["get_backend", "available_backends"]

#: Registry: name -> (module, class). Imported at first use (``import ozaki`` stays light).
_REGISTRY = {"cpu": ("ozaki.backends.cpu.backend", "CPUBackend"),
             "numpy": ("ozaki.backends.numpy.backend", "NumPyBackend")}
_MADE: dict = {}


def available_backends() -> list[str]:
    """Names of the registered backends (``"cpu"``, the default, and ``"numpy"``).

    Examples
    --------
    >>> import ozaki
    >>> ozaki.available_backends()
    ['cpu', 'numpy']
    """
    return list(_REGISTRY)


def get_backend(backend=None):
    """The backend for ``backend``: a registered name, ``None`` (``"cpu"``), or an object
    that implements :class:`ozaki.core.backend.Backend` (returned as is)."""
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
        missing = [name for name in Backend.__protocol_attrs__ if not hasattr(backend, name)] \
            if hasattr(Backend, "__protocol_attrs__") else []
        raise TypeError(f"backend must be one of {available_backends()} or an object "
                        f"implementing ozaki.core.backend.Backend, got {type(backend).__name__}"
                        + (f" (missing {', '.join(sorted(missing))})" if missing else ""))
    return backend

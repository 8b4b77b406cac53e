"""The ``numpy`` backend: the pure-NumPy reference, bitwise equal to ``cpu``.

:class:`~ozaki.backends.numpy.backend.NumPyBackend` implements
:class:`ozaki.core.backend.Backend` from the maths of each step, in modules named after
them: :mod:`~ozaki.backends.numpy.ieee` (bit fields, rounding, power-of-two scaling,
symmetric residues of floats), :mod:`~ozaki.backends.numpy.lines` (exact line data and
floors), :mod:`~ozaki.backends.numpy.residues` (residues of the scaled operands),
:mod:`~ozaki.backends.numpy.crt` (reductions of the exact products and the Chinese
Remainder reconstruction), :mod:`~ozaki.backends.numpy.certificate` (the bound's ratio
pass and maxima), :mod:`~ozaki.backends.numpy.exact` (the exactly rounded dot product,
an exact FMA) and :mod:`~ozaki.backends.numpy.compensated` (Dot2). It imports numpy,
the standard library and :mod:`ozaki.core` only: no numba. Use it with
``backend="numpy"`` (``ozaki.dgemm(A, B, backend="numpy")``).
"""

from .backend import NumPyBackend

__all__ = ["NumPyBackend"]

"""Backends: what runs the passes and the exact products of :mod:`ozaki.core`.

``cpu`` (numba passes on ozaki's own threads, the host engines) and ``numpy``
(the reference: pure NumPy, written from the maths, slow). Both give the same bits.
"""

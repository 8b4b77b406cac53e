"""Distributed 3-D FFTs over MPI: slab and pencil decompositions, bitwise equal to serial.

``mpi4py`` is imported here only (``pip install 'ozaki-emu[mpi]'``); ``import fft`` never
imports it. The process grid is :class:`ozaki.distributed.Grid`: a ``P x 1`` or ``1 x Q``
grid gives slabs, a ``P x Q`` one (both above 1) pencils.

>>> from ozaki.distributed import make_grid                       # doctest: +SKIP
>>> from fft import distributed as dfft                           # doctest: +SKIP
>>> grid = make_grid("2x2")                                       # doctest: +SKIP
>>> x = dfft.scatter(X_on_root, grid)          # pencils along axis 2 # doctest: +SKIP
>>> Y = dfft.fftn(x)                           # the bits of fft.fftn(X), split (1, 2) # doctest: +SKIP
>>> x2 = dfft.ifftn(Y, axes=(2, 1, 0))         # back to split (0, 1) # doctest: +SKIP
>>> Y_whole = dfft.gather(Y)                   # on rank 0        # doctest: +SKIP
"""

from .layout import DistributedArray, gather, scatter
from .transforms import FFTInfo, fftn, ifftn, irfftn, rfftn
from .transpose import redistribute

__all__ = ["DistributedArray", "scatter", "gather", "redistribute", "fftn", "ifftn", "rfftn",
           "irfftn", "FFTInfo"]

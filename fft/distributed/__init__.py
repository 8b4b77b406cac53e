"""Distributed 3-D FFTs, DCTs and DSTs over MPI: slabs and pencils, bitwise equal to serial.

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
>>> C = dfft.dctn(x, type=1)                   # the bits of fft.dctn(X, type=1) # doctest: +SKIP
"""

from .layout import DistributedArray, gather, scatter
from .realtransforms import dctn, dstn, idctn, idstn
from .transforms import FFTInfo, fftn, ifftn, irfftn, rfftn
from .transpose import redistribute

__all__ = ["DistributedArray", "scatter", "gather", "redistribute", "fftn", "ifftn", "rfftn",
           "irfftn", "dctn", "idctn", "dstn", "idstn", "FFTInfo"]

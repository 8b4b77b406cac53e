"""Ozaki Scheme II over MPI: a process grid, block-distributed matrices, SUMMA.

``mpi4py`` is imported here only (``pip install 'ozaki-emu[mpi]'``); ``import ozaki``
never imports it.

>>> from ozaki import distributed                                # doctest: +SKIP
>>> grid = distributed.make_grid("2x2")                          # doctest: +SKIP
>>> A = distributed.scatter(A_on_root, grid); B = distributed.scatter(B_on_root, grid)
>>> C = distributed.dgemm(A, B)        # the bits of ozaki.dgemm(A, B, mode="fast")
>>> C_whole = distributed.gather(C)    # on rank 0
>>> C_native = distributed.summa(A, B)  # native FP64 SUMMA: bits depend on the grid
"""

from .emulated import dgemm, panels
from .layout import DistributedMatrix, Grid, bounds, gather, make_grid, scatter
from .native import SummaInfo, summa

__all__ = ["Grid", "make_grid", "DistributedMatrix", "scatter", "gather", "bounds", "dgemm",
           "panels", "summa", "SummaInfo"]

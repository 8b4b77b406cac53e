"""Ozaki Scheme II over MPI: a process grid, block-distributed matrices, SUMMA, and the
LU and Cholesky factorisations on a block-cyclic layout (HPL).

``mpi4py`` is imported here only (``pip install 'ozaki-emu[mpi]'``); ``import ozaki``
never imports it.

>>> from ozaki import distributed                                # doctest: +SKIP
>>> grid = distributed.make_grid("2x2")                          # doctest: +SKIP
>>> A = distributed.scatter(A_on_root, grid)                     # doctest: +SKIP
>>> B = distributed.scatter(B_on_root, grid)                     # doctest: +SKIP
>>> C = distributed.dgemm(A, B)       # the bits of ozaki.dgemm    # doctest: +SKIP
>>> C_whole = distributed.gather(C)   # on rank 0                  # doctest: +SKIP
>>> C_native = distributed.summa(A, B)  # native FP64: bits depend on the grid # doctest: +SKIP
>>> D = distributed.scatter(A_on_root, grid, block_size=256)      # doctest: +SKIP
>>> lu, piv = distributed.lu_factor(D)  # the bits of ozaki.linalg.lu_factor # doctest: +SKIP
"""

from .cholesky import cho_factor, cho_solve
from .cyclic import CyclicMatrix
from .emulated import dgemm, zgemm
from .lu import lu_factor, lu_solve
from .modular import panels
from .grid import Grid, make_grid
from .layout import DistributedMatrix, bounds, gather, scatter
from .native import SummaInfo, summa

__all__ = ["Grid", "make_grid", "DistributedMatrix", "scatter", "gather", "bounds", "dgemm",
           "zgemm", "panels", "summa", "SummaInfo", "CyclicMatrix", "lu_factor", "lu_solve",
           "cho_factor", "cho_solve"]

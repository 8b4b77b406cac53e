"""Dense linear algebra on FP64-grade emulated products: ``from ozaki import linalg``.

scipy.linalg's signatures, return conventions and dtypes (real and complex matrices):
LU with partial pivoting (:func:`lu_factor`, :func:`lu_solve`, :func:`lu`), Cholesky
(:func:`cho_factor`, :func:`cho_solve`, :func:`cholesky`), triangular solves
(:func:`solve_triangular`) and :func:`solve`, :func:`inv`, :func:`det`; and the
BLAS-form level-3 routines :func:`trsm` and :func:`syrk` (scipy.linalg.blas's).

Blocked right-looking algorithms: the ``O(n^3)`` work (trailing updates, the
block updates of the triangular solves) runs through :func:`ozaki.gemm` with the
caller's product options (``scheme``, ``num_moduli``, ``mode``, ``engine``,
``fallback``); the ``O(n^2 nb)`` panel work is deterministic compiled code (numba, no fastmath) in a
fixed order. So a result's bits depend only on the input, ``block_size`` and the product
options: not on the thread count, nor on the engine for a given scheme and mode.
See docs/linalg.rst.
"""

from .arguments import DEFAULT_BLOCK_SIZE
from .blas3 import syrk, trsm
from .cholesky import cho_factor, cho_solve, cholesky
from .info import PHASES, LinalgInfo
from .lu import lu, lu_factor, lu_solve
from .precision import moduli_for_precision, precision_of_moduli
from .refine import RefinementInfo, solve_refined
from .solve import det, inv, solve
from .triangular import solve_triangular

__all__ = ["lu_factor", "lu_solve", "lu", "cho_factor", "cho_solve", "cholesky",
           "solve_triangular", "solve", "inv", "det", "LinalgInfo", "PHASES",
           "DEFAULT_BLOCK_SIZE", "trsm", "syrk",
           "solve_refined", "RefinementInfo", "moduli_for_precision", "precision_of_moduli"]

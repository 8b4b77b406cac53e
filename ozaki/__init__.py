"""FP64-grade matrix products from exact low-precision matrix products.

Ozaki Scheme II: scale to integers, reduce modulo pairwise coprime moduli,
multiply exactly on an INT8, FP8 or FP64 engine, reconstruct by the Chinese
Remainder Theorem. Bitwise reproducible across engines and thread counts.

>>> import numpy as np, ozaki
>>> C = ozaki.dgemm(np.eye(3), np.arange(9.0).reshape(3, 3))
"""

from .arguments import MODES
from .certify import CertificationError
from .engines import available_engines
from .front import dgemm, gemm, zgemm
from .prepared import PreparedOperand, prepare
from .stacks import matmul
from .info import PHASES, OzakiInfo
from .moduli import MODULI_VERSION, SCHEMES, auto_num_moduli
from .products import exact_gemms
from .workspace import workspace_bytes

__all__ = ["dgemm", "gemm", "zgemm", "matmul", "prepare", "PreparedOperand",
           "available_engines", "workspace_bytes", "OzakiInfo", "CertificationError",
           "MODULI_VERSION", "exact_gemms", "auto_num_moduli", "SCHEMES", "MODES", "PHASES"]
__version__ = "0.1.0"

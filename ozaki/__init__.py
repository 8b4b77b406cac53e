"""FP64-grade matrix products from exact low-precision matrix products.

Ozaki Scheme II: scale to integers, reduce modulo pairwise coprime moduli,
multiply exactly on an INT8, FP8 or FP64 engine, reconstruct by the Chinese
Remainder Theorem. Bitwise reproducible across engines and thread counts.

>>> import numpy as np, ozaki
>>> C = ozaki.dgemm(np.eye(3), np.arange(9.0).reshape(3, 3))
"""

from .api.arguments import MODES
from .core.certify import CertificationError
from .backends.engines import available_engines
from .api.front import dgemm, gemm, zgemm
from .api.prepared import PreparedOperand, prepare
from .api.stacks import matmul
from .core.info import PHASES, OzakiInfo
from .core.moduli import MODULI_VERSION, SCHEMES, auto_num_moduli
from .core.products import exact_gemms
from .core.workspace import workspace_bytes

__all__ = ["dgemm", "gemm", "zgemm", "matmul", "prepare", "PreparedOperand",
           "available_engines", "workspace_bytes", "OzakiInfo", "CertificationError",
           "MODULI_VERSION", "exact_gemms", "auto_num_moduli", "SCHEMES", "MODES", "PHASES"]
__version__ = "0.1.0"

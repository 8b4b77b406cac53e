"""FP64-grade matrix products from exact low-precision matrix products.

Ozaki Scheme II: scale to integers, reduce modulo pairwise coprime moduli,
multiply exactly on an INT8, FP8 or FP64 engine, reconstruct by the Chinese
Remainder Theorem. Bitwise reproducible across engines and thread counts.

>>> import numpy as np, ozaki
>>> C = ozaki.dgemm(np.eye(3), np.arange(9.0).reshape(3, 3))
"""

from .certify import CertificationError
from .engines import available_engines
from .emulation import dgemm, gemm, workspace_bytes
from .info import OzakiInfo
from .moduli import MODULI_VERSION

__all__ = ["dgemm", "gemm", "available_engines", "workspace_bytes", "OzakiInfo",
           "CertificationError", "MODULI_VERSION"]
__version__ = "0.1.0"

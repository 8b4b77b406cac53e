"""FP64-grade matrix products from exact low-precision matrix products.

Ozaki Scheme II: scale to integers, reduce modulo pairwise coprime moduli,
multiply exactly on an INT8, FP8 or FP64 engine, reconstruct by the Chinese
Remainder Theorem. Bitwise reproducible across engines and thread counts.

>>> import numpy as np, ozaki
>>> C = ozaki.dgemm(np.eye(3), np.arange(9.0).reshape(3, 3))
"""

from .api.arguments import MODES
from .api.costs import exact_gemms, workspace_bytes
from .api.facts import (Resolved, available_engines, emulated_options, gemms_per_modulus,
                        get_engine, get_scheme, get_workers, moduli, resolve_options,
                        set_scheme, set_small_products, set_workers)
from .api.front import dgemm, gemm, zgemm
from .api.prepared import PreparedOperand, prepare
from .api.stacks import matmul
from .backends import available_backends, set_backend
from .core.certify import CertificationError
from .core.engine import Engine
from .core.info import PHASES, OzakiInfo
from .core.moduli import MODULI_VERSION, SCHEMES, auto_num_moduli

__all__ = ["dgemm", "gemm", "zgemm", "matmul", "prepare", "PreparedOperand",
           "available_engines", "workspace_bytes", "OzakiInfo", "CertificationError",
           "MODULI_VERSION", "exact_gemms", "auto_num_moduli", "SCHEMES", "MODES", "PHASES",
           "available_backends", "set_workers", "get_workers", "resolve_options", "Resolved",
           "get_engine", "Engine", "moduli", "gemms_per_modulus", "set_small_products",
           "set_scheme", "get_scheme", "emulated_options", "set_backend"]
__version__ = "0.1.0"

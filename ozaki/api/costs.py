"""What a call costs before it runs: its exact GEMMs and its workspace."""

from __future__ import annotations

import numpy as np

from ..backends import get_backend
from ..core.engine import Engine
from ..core.moduli import MODULI, auto_num_moduli, residue_dtype
from ..core.pieces import column_block, piece_bytes
from ..core.passes import number_types
from ..core.products import product_calls
from ..core.scaling import quantization_bits
from .arguments import resolve

__all__ = ["exact_gemms", "workspace_bytes"]


def exact_gemms(k: int, *, scheme: str = "fp64", num_moduli: int = 6, mode: str = "fast",
                engine: str | Engine | None = None) -> list[tuple[int, int, int]]:
    """The exact GEMMs one ``dgemm`` call runs at a given count, before any refinement.

    Parameters
    ----------
    k : int
        Inner dimension.
    scheme, mode, engine
        As for :func:`dgemm` (``scheme="auto"`` resolves as there).
    num_moduli : int
        The count N the call settled on (``info.num_moduli``).

    Returns
    -------
    list of (k_call, amax, bmax)
        One entry per ``engine.matmul`` call: its inner dimension and operand
        bounds (:meth:`~ozaki.Engine.blocks` gives its exact blocks). In
        accurate mode the first is the bound GEMM; then, modulus by modulus, the
        products (k-blocked, FP8 digits: three per block). The data-dependent
        refinement (FP64 GEMMs on a failing block, ``info.refined_block``) is
        not included. The entries of one modulus's k-blocks together count as
        :func:`~ozaki.core.products.gemms_per_modulus` GEMMs in ``info.gemms``.
    """
    if not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    scheme, num_moduli, mode, eng = resolve(scheme, num_moduli, mode, engine)
    if num_moduli == "auto":
        raise ValueError("num_moduli must be the count a call used (info.num_moduli), not 'auto'")
    calls = []
    if mode == "accurate":
        q = 2 ** quantization_bits(scheme, k) - 1
        calls.append((int(k), q, q))
    for p in MODULI[scheme][:num_moduli]:
        calls += product_calls(eng, p, int(k))
    return calls


def workspace_bytes(m: int, n: int, k: int, *, scheme: str = "fp64",
                    num_moduli: int | str = "auto", engine=None, backend=None) -> int:
    """Bytes of workspace that ``dgemm`` of an (m, k) by (k, n) product takes.

    For ``num_moduli="auto"`` the count is data-dependent; this gives the size
    for the typical count (int8 16, fp8 13, fp64 6, int7 19 at ``k <= 4096``). A
    product small enough keeps its N residue planes per operand and its N exact
    products in FP64
    (about ``8 N (m k + k n + m n)`` bytes, at most a few tens of MiB); a large
    one holds the residue planes of as many moduli as fit 32 MiB or the bytes of one
    FP64 plane per operand (``m k + k n`` entries: one FP64 plane, or eight int8
    ones) and the N modular products as small integers (``N m n`` elements of 1, 2
    or 4 bytes for the int8 and int7, fp8 and fp64 schemes); each exact modular
    product is written into the result's own memory before the store pass reduces
    it: for the fp64 scheme with 6 moduli and ``m = n = k >= 1449``, ``5 n**2``
    doubles (the result adds one more). Planes
    and products are FP64 (8 bytes an entry), or on an integer engine of the CPU
    backend (``cpu-onednn``) int8 planes and INT32 products (1 and 4 bytes). A
    wide product with a small ``A`` runs in blocks of columns and needs only a
    block's share. Simulation engines and k-blocking add their own temporaries. A call
    that evaluates its certificate entry by entry (``bounds=True``, a refined block in
    accurate mode, entries left to the fallback) also keeps an FP64 plane of the
    product's shape for the per-entry ratios, and one that refines a block two more
    for the block's exact bound products: data-dependent, so not counted here.
    ``backend`` is whose types count (default: the calling thread's).
    """
    for name, v in (("m", m), ("n", n), ("k", k)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    scheme, num_moduli, _, eng = resolve(scheme, num_moduli, "accurate", engine)
    if num_moduli == "auto":
        num_moduli = auto_num_moduli(scheme, k)
    moduli = MODULI[scheme][:num_moduli]
    item = residue_dtype(moduli).itemsize
    plane, product = number_types(get_backend(backend), eng, moduli, k)
    w = column_block(None, m, k, n, num_moduli)
    return piece_bytes(1, m, k, w, num_moduli, item, blocked=w < n, plane=plane.itemsize,
                       product=product.itemsize)

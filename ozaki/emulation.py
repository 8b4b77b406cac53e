"""The front: ``dgemm`` and ``gemm``, one data path.

scale -> residues -> exact products -> reconstruct. The operands' residues are
streamed one modulus at a time (one FP64 plane per operand); each modular
product is stored as small integers (int8, int16 or int32 per element and
modulus) and the CRT combines them in one pass at the end, in registers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from . import kernels, scaling
from .engines import Engine, get_engine
from .moduli import MIN_MODULI, MODULI, MODULI_VERSION, SCHEMES, auto_num_moduli, crt_plan
from .products import gemms_per_modulus, modular_constants, modular_product, product_kblock
from .special import apply_nonfinite
from .workspace import workspace

__all__ = ["dgemm", "gemm", "workspace_bytes", "OzakiInfo"]

MODES = ("accurate", "fast")
_PHASES = ("scaling", "residues", "products", "reconstruction")
#: ``2**E mod p`` is tabulated for scaled exponents ``E`` below this bound.
_MAX_EXPONENT = 1100


@dataclass
class OzakiInfo:
    """What one call did.

    Attributes
    ----------
    scheme, mode, engine : str
    num_moduli : int
    moduli_version : int
        Version of the moduli tables (results are reproducible per version).
    gemms : int
        Low-precision GEMMs in the unit of the engine (``N``, or ``3N`` for FP8
        digits, plus one for the accurate-mode bound).
    seconds : dict
        Wall time per phase: ``scaling`` (includes the bound GEMM), ``residues``,
        ``products``, ``reconstruction``.
    workspace_bytes : int
        Bytes of the workspace planes this call used.
    """

    scheme: str
    num_moduli: int
    mode: str
    engine: str
    moduli_version: int = MODULI_VERSION
    gemms: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_PHASES, 0.0))
    workspace_bytes: int = 0


# -- argument checking -------------------------------------------------------

def _operand(X: Any, name: str) -> np.ndarray:
    if isinstance(X, np.ndarray):
        arr = X
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:  # e.g. a GPU array that refuses implicit copies
            raise TypeError(f"{name} must be a real array convertible to float64 "
                            f"(got {type(X).__name__}: {exc})") from None
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} is complex: complex support is not yet available; "
                        "multiply real and imaginary parts separately")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {arr.ndim}-D with shape {arr.shape}")
    return arr.astype(np.float64, copy=False)


def _check_choice(value, name: str, choices) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; "
                         f"got {value!r}")


def _resolve(scheme, num_moduli, mode, engine, k):
    _check_choice(scheme, "scheme", ("auto",) + SCHEMES)
    _check_choice(mode, "mode", MODES)
    if scheme == "auto":
        # On the CPU the FP64 BLAS path is the fast one; a simulation engine
        # asked for by name runs its own scheme.
        name = engine.name if isinstance(engine, Engine) else engine
        scheme = {"cpu-fp8": "fp8", "cpu-int8": "int8"}.get(name, "fp64")
    eng = get_engine(engine, scheme)
    top = len(MODULI[scheme])
    if isinstance(num_moduli, str):
        if num_moduli != "auto":
            raise ValueError(f"num_moduli must be 'auto' or an int in "
                             f"[{MIN_MODULI}, {top}]; got {num_moduli!r}")
        num_moduli = auto_num_moduli(scheme, k)
    elif isinstance(num_moduli, (bool, np.bool_)) or not isinstance(num_moduli, (int, np.integer)):
        raise TypeError(f"num_moduli must be 'auto' or an int, got {type(num_moduli).__name__}")
    elif not MIN_MODULI <= num_moduli <= top:
        raise ValueError(f"num_moduli for scheme {scheme!r} must be in "
                         f"[{MIN_MODULI}, {top}]; got {num_moduli}")
    return scheme, int(num_moduli), mode, eng


# -- the scheme --------------------------------------------------------------

class _Operand:
    """An operand read as C-ordered bits; ``outer`` is the axis that gets shifts.

    A Fortran-ordered array is read through its transpose (no copy); residue
    planes are then returned transposed so they always have the product's shape.
    """

    def __init__(self, X: np.ndarray, outer: int):
        self.shape = X.shape
        if X.flags.c_contiguous:
            self.bits, self.axis, self.T = X.view(np.int64), outer, False
        elif X.flags.f_contiguous:
            self.bits, self.axis, self.T = X.T.view(np.int64), 1 - outer, True
        else:
            self.bits, self.axis, self.T = np.ascontiguousarray(X).view(np.int64), outer, False

    def stats(self):
        with kernels.LOCK:
            maxbits, bad = kernels.absmax_bits(self.bits, self.axis)
        E, zero = scaling.exponents(maxbits)
        return E, zero, bad

    def sumsq(self, E):
        with kernels.LOCK:
            return kernels.sumsq_normalized(self.bits, E, self.axis)

    def _shifts(self, shift):
        zeros = np.zeros(self.bits.shape[1 - self.axis], np.int64)
        return (shift, zeros) if self.axis == 0 else (zeros, shift)

    def _buffer(self, flat):
        """``flat`` (the workspace slot, product shape) viewed in the bits' layout."""
        return flat.reshape(-1)[: self.bits.size].reshape(self.bits.shape)

    def _plane(self, buf):
        return buf.T if self.T else buf

    def quantize(self, shift, slot):
        buf = self._buffer(slot)
        srow, scol = self._shifts(shift)
        with kernels.LOCK:
            kernels.quantize_up(self.bits, srow, scol, buf)
        return self._plane(buf)

    def residues(self, shift, p, pow2mod, slot):
        buf = self._buffer(slot)
        srow, scol = self._shifts(shift)
        with kernels.LOCK:
            kernels.residues(self.bits, srow, scol, float(p), 1.0 / p, pow2mod, buf)
        return self._plane(buf)


_POW2MOD: dict[int, np.ndarray] = {}


def _pow2mod(p: int) -> np.ndarray:
    tab = _POW2MOD.get(p)
    if tab is None:
        tab = np.array([pow(2, e, p) for e in range(_MAX_EXPONENT + 27)], dtype=np.float64)
        _POW2MOD[p] = tab
    return tab


def _residue_dtype(moduli) -> np.dtype:
    """Smallest integer type that holds every symmetric residue of ``moduli``."""
    top = max(moduli)
    return np.dtype(np.int8 if top <= 256 else np.int16 if top <= 65536 else np.int32)


def _slots(m: int, n: int, k: int, scheme: str, num_moduli: int,
           engine: Engine) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Workspace planes (name -> (shape, dtype)) that one call takes."""
    plan = crt_plan(scheme, num_moduli)
    f8 = np.dtype(np.float64)
    slots = {"ra": ((m, k), f8), "rb": ((k, n), f8), "prod": ((m, n), f8),
             "store": ((num_moduli, m, n), _residue_dtype(plan.moduli))}
    if k > min(product_kblock(engine, p) for p in plan.moduli):
        slots["block"] = ((m, n), f8)
    return slots


def _nbytes(slots) -> int:
    return sum(int(np.prod(shape)) * dtype.itemsize for shape, dtype in slots.values())


def workspace_bytes(m: int, n: int, k: int, *, scheme: str = "fp64",
                    num_moduli: int | Literal["auto"] = "auto",
                    engine: str | Engine | None = None) -> int:
    """Bytes of workspace that ``dgemm`` of an (m, k) by (k, n) product takes.

    The workspace holds one residue plane per operand (``m k + k n`` doubles),
    one product plane and the CRT level accumulators (``(1 + L) m n``, ``L`` = 2
    or 3), and a k-block plane when ``k`` needs blocking; it is independent of the
    number of moduli beyond ``L``. Simulation engines add their own temporaries.
    """
    for name, v in (("m", m), ("n", n), ("k", k)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    scheme, num_moduli, _, eng = _resolve(scheme, num_moduli, "accurate", engine, k)
    return _nbytes(_slots(m, n, k, scheme, num_moduli, eng))


def _emulate(A, B, scheme, num_moduli, mode, engine, out):
    """``out = A @ B`` by Ozaki Scheme II; returns the info record."""
    m, k = A.shape
    n = B.shape[1]
    info = OzakiInfo(scheme, num_moduli, mode, engine.name)
    sec = info.seconds
    plan = crt_plan(scheme, num_moduli)
    slots = _slots(m, n, k, scheme, num_moduli, engine)
    info.workspace_bytes = _nbytes(slots)
    ws = workspace()
    buf = {name: ws.take(name, shape, dtype) for name, (shape, dtype) in slots.items()}

    t0 = time.perf_counter()
    opa, opb = _Operand(A, 0), _Operand(B, 1)
    Ea, zero_a, bad_a = opa.stats()
    Eb, zero_b, bad_b = opb.stats()
    if mode == "fast":
        s = scaling.fast_shifts(Ea, zero_a, opa.sumsq(Ea), k, plan.H)
        t = scaling.fast_shifts(Eb, zero_b, opb.sumsq(Eb), k, plan.H)
    else:
        r = scaling.quantization_bits(scheme, k)
        e = scaling.accurate_quantizers(Ea, zero_a, r)
        f = scaling.accurate_quantizers(Eb, zero_b, r)
        Abar = opa.quantize(e, buf["ra"])
        Bbar = opb.quantize(f, buf["rb"])
        M = engine.matmul(Abar, Bbar, 2 ** r, 2 ** r, out=buf["prod"])
        s, t = scaling.accurate_shifts(M, e, f, plan.H)
        info.gemms += 1
    top = max(int((Ea + s).max(initial=0)), int((Eb + t).max(initial=0)))
    if top >= _MAX_EXPONENT:  # pragma: no cover - excluded by the shift bounds
        raise AssertionError(f"scaled exponent {top} beyond the residue tables")
    t1 = time.perf_counter()
    sec["scaling"] += t1 - t0

    for i, p in enumerate(plan.moduli):
        t0 = time.perf_counter()
        ra = opa.residues(s, p, _pow2mod(p), buf["ra"])
        rb = opb.residues(t, p, _pow2mod(p), buf["rb"])
        t1 = time.perf_counter()
        prod = modular_product(engine, ra, rb, p, buf["prod"], buf.get("block"))
        info.gemms += gemms_per_modulus(engine, p)
        t2 = time.perf_counter()
        pf, pinv, c26 = modular_constants(p)
        with kernels.LOCK:
            kernels.store_residues(prod, pf, pinv, c26, buf["store"][i])
        t3 = time.perf_counter()
        sec["residues"] += t1 - t0
        sec["products"] += t2 - t1
        sec["reconstruction"] += t3 - t2

    t0 = time.perf_counter()
    with kernels.LOCK:
        kernels.reconstruct(buf["store"], plan.weights, plan.p_levels, plan.p_inv, s, t, out)
    if bad_a.any() or bad_b.any():
        apply_nonfinite(A, B, bad_a, bad_b, out)
    sec["reconstruction"] += time.perf_counter() - t0
    return info


# -- public functions --------------------------------------------------------

def gemm(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False,
         scheme: str = "auto", num_moduli: int | Literal["auto"] = "auto",
         mode: str = "accurate", engine: str | Engine | None = "auto",
         out: np.ndarray | None = None, return_info: bool = False):
    """BLAS-form product ``alpha op(A) op(B) + beta C`` with FP64-grade emulation.

    The result is ``fl(fl(alpha X) + fl(beta C))`` with ``X`` the emulated
    ``op(A) op(B)``; ``alpha == 1`` skips its product and ``beta == 0`` never
    reads ``C``; ``alpha == 0`` skips the matrix product, as BLAS does.
    ``C`` is never modified: the result is a new array (or ``out``).

    Parameters
    ----------
    A : array_like, shape (m, k), or (k, m) with ``trans_a``
    B : array_like, shape (k, n), or (n, k) with ``trans_b``
    C : array_like, shape (m, n), optional
        Required when ``beta != 0``.
    alpha, beta : float
    trans_a, trans_b : bool
        Use the transpose of ``A`` / ``B`` (no copy).
    scheme, num_moduli, mode, engine, out, return_info
        As in :func:`dgemm`.

    Returns
    -------
    ndarray, shape (m, n), float64
        And an :class:`OzakiInfo` when ``return_info`` (``None`` fields of
        work not done when ``alpha == 0``).
    """
    A = _operand(A, "A")
    B = _operand(B, "B")
    if trans_a:
        A = A.T
    if trans_b:
        B = B.T
    m, k = A.shape
    if B.shape[0] != k:
        raise ValueError(f"inner dimensions differ: op(A) is {A.shape}, op(B) is {B.shape}")
    n = B.shape[1]
    alpha, beta = float(alpha), float(beta)
    if beta != 0.0:
        if C is None:
            raise ValueError("C is required when beta != 0")
        C = _operand(C, "C")
        if C.shape != (m, n):
            raise ValueError(f"C must have shape {(m, n)}, got {C.shape}")
    scheme, num_moduli, mode, eng = _resolve(scheme, num_moduli, mode, engine, k)
    if out is not None:
        if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != (m, n):
            raise ValueError(f"out must be a float64 ndarray of shape {(m, n)}")
        if not out.flags.writeable:
            raise ValueError("out must be writeable")
        for name, X in (("A", A), ("B", B), ("C", C)):
            if X is not None and np.may_share_memory(out, X):
                raise ValueError(f"out may not overlap {name}")
    result = out if out is not None and out.flags.c_contiguous else np.empty((m, n))

    info = OzakiInfo(scheme, num_moduli, mode, eng.name)
    if alpha == 0.0 or m == 0 or n == 0:
        result[...] = 0.0
    elif k == 0:
        result[...] = 0.0
    else:
        info = _emulate(A, B, scheme, num_moduli, mode, eng, result)
    if alpha != 1.0:
        np.multiply(result, alpha, out=result)
    if beta != 0.0:
        result += beta * C
    if out is not None and result is not out:
        out[...] = result
        result = out
    return (result, info) if return_info else result


def dgemm(A: Any, B: Any, *, scheme: str = "auto",
          num_moduli: int | Literal["auto"] = "auto", mode: str = "accurate",
          engine: str | Engine | None = "auto", out: np.ndarray | None = None,
          return_info: bool = False):
    """FP64-grade matrix product ``A @ B`` by Ozaki Scheme II.

    ``A`` and ``B`` are scaled to integers by powers of two, reduced modulo
    pairwise coprime moduli, multiplied exactly on a low-precision engine, and
    recombined by the Chinese Remainder Theorem. For a fixed (scheme,
    num_moduli, mode) the result is bitwise identical on every engine and for
    any number of threads.

    Parameters
    ----------
    A : array_like, shape (m, k)
        Any real array convertible to float64 (int and float32 are converted),
        C or Fortran order or a view. Never modified.
    B : array_like, shape (k, n)
    scheme : {"auto", "int8", "fp8", "fp64"}
        The low-precision unit being emulated. ``"auto"`` picks ``"fp64"`` on
        the CPU BLAS engine (the fast path), or the scheme of a simulation engine.
    num_moduli : int or "auto"
        Number of moduli, from 2 to the scheme's table size (20). ``"auto"``
        picks the count that keeps the error within 2x native FP64 at
        ``phi <= 1``: 16 (int8), 13 (fp8), 6 (fp64) for ``k <= 4096``, more as
        ``k`` grows.
    mode : {"accurate", "fast"}
        ``"accurate"`` bounds ``|A||B|`` with one exact small-integer GEMM;
        ``"fast"`` uses row and column 2-norms (no GEMM, fewer bits kept).
    engine : str, Engine or "auto"
        ``"cpu-blas"`` (FP64 BLAS, the default), ``"cpu-fp8"`` (FP8 tensor-core
        simulation), ``"cpu-int8"`` (INT8 with INT32 accumulation).
    out : ndarray, shape (m, n), float64, optional
        Destination; may not overlap ``A`` or ``B``.
    return_info : bool
        Also return an :class:`OzakiInfo`.

    Returns
    -------
    C : ndarray, shape (m, n), float64
    info : OzakiInfo
        Only when ``return_info``.

    Raises
    ------
    TypeError
        Complex or non-numeric input, non-integer ``num_moduli``.
    ValueError
        Not 2-D, inner dimensions differ, unknown scheme, mode or engine,
        ``num_moduli`` out of range, bad ``out``.

    Notes
    -----
    Non-finite inputs follow exact arithmetic: ``C_ij`` is NaN iff row ``i`` of
    ``A`` or column ``j`` of ``B`` holds a NaN, or ``inf * 0`` or infinite
    products of both signs occur; ``+-inf`` for infinite products of one sign
    or when the exact result overflows. Exact zeros are returned as ``+0.0``.

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> A = np.arange(6.0).reshape(2, 3); B = np.ones((3, 2))
    >>> ozaki.dgemm(A, B)
    array([[ 3.,  3.],
           [12., 12.]])
    """
    return gemm(A, B, scheme=scheme, num_moduli=num_moduli, mode=mode,
                engine=engine, out=out, return_info=return_info)

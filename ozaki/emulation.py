"""The front: ``dgemm`` and ``gemm``, one data path.

scale -> residues -> exact products -> reconstruct. The operands' residues are
streamed one modulus at a time (one FP64 plane per operand); each modular
product is stored as small integers (int8, int16 or int32 per element and
modulus) and the CRT combines them in one pass at the end, in registers.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Literal

import numpy as np

from . import certify, kernels, scaling
from .engines import BlasEngine, Engine, get_engine
from .fallback import exact_bound, exact_entries, overflow_risk
from .info import OzakiInfo
from .moduli import MIN_MODULI, MODULI, SCHEMES, auto_num_moduli, crt_plan, max_moduli
from .operands import MAX_EXPONENT, Operand, pow2mod
from .products import (gemms_per_modulus, modular_constants, modular_product, product_calls,
                       product_kblock)
from .special import apply_nonfinite
from .workspace import workspace

__all__ = ["dgemm", "gemm", "workspace_bytes", "exact_gemms"]

MODES = ("accurate", "fast")
FALLBACKS = ("exact", "raise", "none")


# -- argument checking -------------------------------------------------------

def _operand(X: Any, name: str) -> np.ndarray:
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array: masks are not supported (the product "
                        "would silently use the masked values); pass np.ma.filled(X, 0) "
                        "or the compressed data")
    try:
        arr = np.asarray(X)  # a plain ndarray: subclasses (np.matrix) are viewed as such
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
    out = arr.astype(np.float64, copy=False)
    if arr.dtype.kind in "iu" and arr.dtype.itemsize > 4 and arr.size:
        # 64-bit integers beyond 2**53 do not convert exactly: refuse to round them
        with np.errstate(invalid="ignore"):  # 2**63 and 2**64 wrap: caught below
            back = out.astype(arr.dtype)
        if not np.array_equal(back, arr):
            raise ValueError(f"{name} holds integers that float64 cannot represent exactly "
                             "(|x| > 2**53); convert them explicitly if rounding is intended")
    return out


def _transpose_flag(value, name: str) -> bool:
    """``trans_a``/``trans_b``: a bool, or a BLAS letter 'N' / 'T' / 'C' (any case)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.upper() in ("N", "T", "C"):
        return value.upper() != "N"  # 'C' is 'T' for real operands
    raise TypeError(f"{name} must be a bool or one of 'N', 'T', 'C'; got {value!r}")


def _scalar(value, name: str) -> float:
    """``alpha``/``beta``: a real number (Python or numpy, not bool, not a string)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        if isinstance(value, (complex, np.complexfloating)):
            raise TypeError(f"{name} is complex: complex support is not yet available")
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)


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
    top = max_moduli(scheme)
    if isinstance(num_moduli, str):
        if num_moduli != "auto":
            raise ValueError(f"num_moduli must be 'auto' or an int in "
                             f"[{MIN_MODULI}, {top}]; got {num_moduli!r}")
        return scheme, "auto", mode, eng
    elif isinstance(num_moduli, (bool, np.bool_)) or not isinstance(num_moduli, (int, np.integer)):
        raise TypeError(f"num_moduli must be 'auto' or an int, got {type(num_moduli).__name__}")
    elif not MIN_MODULI <= num_moduli <= top:
        raise ValueError(f"num_moduli for scheme {scheme!r} must be in "
                         f"[{MIN_MODULI}, {top}]; got {num_moduli}")
    return scheme, int(num_moduli), mode, eng


# -- the scheme --------------------------------------------------------------

def _residue_dtype(moduli) -> np.dtype:
    """Smallest integer type that holds every symmetric residue of ``moduli``."""
    top = max(moduli)
    return np.dtype(np.int8 if top <= 256 else np.int16 if top <= 65536 else np.int32)


def _planes(m: int, n: int, k: int, scheme: str,
            engine: Engine) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """FP64 workspace planes (name -> (shape, dtype)), whatever the count."""
    f8 = np.dtype(np.float64)
    slots = {"ra": ((m, k), f8), "rb": ((k, n), f8), "prod": ((m, n), f8)}
    if k > min(product_kblock(engine, p) for p in MODULI[scheme]):
        slots["block"] = ((m, n), f8)
    return slots


def _store(m: int, n: int, scheme: str, num_moduli: int) -> tuple[tuple[int, ...], np.dtype]:
    """The plane of the N modular products, as small integers."""
    return (num_moduli, m, n), _residue_dtype(MODULI[scheme][:num_moduli])


def _nbytes(slots) -> int:
    return sum(int(np.prod(shape)) * dtype.itemsize for shape, dtype in slots.values())


def workspace_bytes(m: int, n: int, k: int, *, scheme: str = "fp64",
                    num_moduli: int | Literal["auto"] = "auto",
                    engine: str | Engine | None = None) -> int:
    """Bytes of workspace that ``dgemm`` of an (m, k) by (k, n) product takes.

    For ``num_moduli="auto"`` the count is data-dependent; this gives the size
    for the typical count (16, 13, 6 at ``k <= 4096``). The workspace holds one
    FP64 residue plane per operand (``m k + k n``
    doubles), one FP64 product plane (``m n``), the N modular products as small
    integers (``N m n`` elements of int8, int16 or int32: 1, 2 or 4 bytes for the
    int8, fp8 and fp64 schemes) and, when ``k`` exceeds one exact block, a
    k-block plane (``m n`` doubles). Simulation engines add their own
    temporaries. For the fp64 scheme with 6 moduli and ``m = n = k``: ``6 n**2``
    doubles (the result adds one more).
    """
    for name, v in (("m", m), ("n", n), ("k", k)):
        if not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    scheme, num_moduli, _, eng = _resolve(scheme, num_moduli, "accurate", engine, k)
    if num_moduli == "auto":
        num_moduli = auto_num_moduli(scheme, k)
    return _nbytes({**_planes(m, n, k, scheme, eng), "store": _store(m, n, scheme, num_moduli)})


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
        bounds (:meth:`~ozaki.engines.Engine.blocks` gives its exact blocks). In
        accurate mode the first is the bound GEMM; then, modulus by modulus, the
        products (k-blocked, FP8 digits: three per block). The data-dependent
        refinement (two FP64 GEMMs on a failing block, ``info.refined_block``) is
        not included. The entries of one modulus's k-blocks together count as
        :func:`~ozaki.products.gemms_per_modulus` GEMMs in ``info.gemms``.
    """
    if not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    scheme, num_moduli, mode, eng = _resolve(scheme, num_moduli, mode, engine, k)
    if num_moduli == "auto":
        raise ValueError("num_moduli must be the count a call used (info.num_moduli), not 'auto'")
    calls = []
    if mode == "accurate":
        q = 2 ** scaling.quantization_bits(scheme, k) - 1
        calls.append((int(k), q, q))
    for p in crt_plan(scheme, num_moduli).moduli:
        calls += product_calls(eng, p, int(k))
    return calls


def _certified_shifts(opa, opb, stats_a, stats_b, scheme, num_moduli, mode, engine,
                      buf, info, policy, want_bound):
    """Step 1 with the accuracy contract: shifts, count and certificate.

    Returns ``(num_moduli, s, t, mask)``; ``mask`` flags the uncertified entries
    when the fallback needs them (accurate mode), else ``None``.
    """
    (Ea, zero_a, _, nA), (Eb, zero_b, _, nB) = stats_a, stats_b
    m, k = opa.shape
    n = opb.shape[1]
    start = auto_num_moduli(scheme, k) if num_moduli == "auto" else num_moduli
    if mode == "fast":
        (n2a, n1a), (n2b, n1b) = opa.norms(Ea), opb.norms(Eb)
        na = certify.Normwise.from_sums(Ea, zero_a, n2a, n1a, k)
        nb = certify.Normwise.from_sums(Eb, zero_b, n2b, n1b, k)

        def evaluate(count):
            plan = crt_plan(scheme, count)
            s = scaling.fast_shifts(Ea, zero_a, n2a, k, plan.H)
            t = scaling.fast_shifts(Eb, zero_b, n2b, k, plan.H)
            ratio = certify.normwise_ratio(na, nb, s, t, plan.rounding, plan.gamma2)
            return certify.Certificate(count, s, t, ratio, 0 if ratio <= 1 else m * n,
                                       "normwise")

        cert = (certify.choose_count(evaluate, scheme, start) if num_moduli == "auto"
                else evaluate(start))
        s, t, mask = cert.sigma, cert.tau, None
        if cert.uncertified and (policy != "none" or want_bound) or want_bound:
            # the separable maximum failed (or bounds are wanted): per entry
            plan = crt_plan(scheme, cert.num_moduli)
            ratio = np.empty((m, n))
            bound = np.empty((m, n)) if want_bound else None
            fails = certify.normwise_entries(na, nb, s, t, plan.rounding, plan.gamma2,
                                             ratio, bound)
            cert = certify.Certificate(cert.num_moduli, s, t, float(ratio.max(initial=0.0)),
                                       fails, "normwise")
            mask = ratio > 1
            info.error_bound = bound
    else:
        r = scaling.quantization_bits(scheme, k)
        e = scaling.accurate_quantizers(Ea, zero_a, r)
        f = scaling.accurate_quantizers(Eb, zero_b, r)
        # integers below 2**20: exact in FP32, half the memory of the planes
        FA = opa.quantize(e, buf["ra"].view(np.float32))
        FB = opb.quantize(f, buf["rb"].view(np.float32))
        # exact: FP64 sums of integers below 2**53
        rF, cF = FA.sum(axis=1, dtype=np.float64), FB.sum(axis=0, dtype=np.float64)
        G = engine.matmul(FA, FB, 2 ** r - 1, 2 ** r - 1, out=buf["prod"])
        info.gemms += 1

        def evaluate(count, **kw):
            return certify.componentwise(G, rF, cF, nA, nB, e, f, scheme, count, **kw)

        auto = num_moduli == "auto"
        cert = evaluate(start)
        ratio = bound = refine = None
        if auto and not cert.uncertified:  # the common case: walk down, coarse bound only
            cert = certify.choose_count(evaluate, scheme, start)
        elif cert.uncertified and (auto or policy != "none" or want_bound):
            # Where the coarse bound fails, the refined bound (two exact FP64 GEMMs
            # on the block of failing rows and columns) may certify at this count;
            # for "auto", more moduli may too. Refine when the block costs less
            # than the extra moduli the coarse bound would need.
            ratio = np.empty((m, n))
            evaluate(start, ratio=ratio)
            fail = ratio > 1
            rows, cols = np.flatnonzero(fail.any(axis=1)), np.flatnonzero(fail.any(axis=0))
            coarse = certify.choose_count(evaluate, scheme, start) if auto else cert
            extra = coarse.num_moduli - start if not coarse.uncertified else np.inf
            if not auto or 2 * len(rows) * len(cols) <= extra * m * n:
                refine = _refinement(opa.X, opb.X, rows, cols, stats_a, stats_b, k, rF, cF)
                info.gemms += 2
                info.refined_block = (len(rows), len(cols))
            else:
                cert = coarse
        mask = None
        if refine is not None or want_bound or cert.uncertified:
            ratio = np.empty((m, n)) if ratio is None else ratio
            bound = np.empty((m, n)) if want_bound else None

            def final(count):
                c = evaluate(count, ratio=ratio, bound=bound)
                if refine is None:
                    return c
                return refine.certify(c, e, f, crt_plan(scheme, count), ratio, bound)

            if refine is not None and auto:  # failures only shrink as the count grows
                cert = certify.choose_count(final, scheme, start, down=False)
            cert = final(cert.num_moduli)  # leaves this count's ratio and bound
            mask = ratio > 1
            info.error_bound = bound
        s, t = e + cert.sigma, f + cert.tau
    info.num_moduli = cert.num_moduli
    info.bound_kind = cert.kind
    info.max_bound_ratio = cert.max_ratio
    info.uncertified = cert.uncertified
    if cert.uncertified and policy == "raise":
        raise certify.CertificationError(certify.explain(cert, mask, scheme, mode))
    return cert.num_moduli, s, t, mask


def _refinement(A, B, rows, cols, stats_a, stats_b, k, rF, cF) -> certify.Refinement:
    """Exact FP64 bound GEMMs of the failing rows of ``A`` and columns of ``B``."""
    r = min(20, (53 - int(np.ceil(np.log2(max(k, 1))))) // 2 - 1)
    (Ea, zero_a, _, nA), (Eb, zero_b, _, nB) = stats_a, stats_b
    e = scaling.accurate_quantizers(Ea[rows], zero_a[rows], r)
    f = scaling.accurate_quantizers(Eb[cols], zero_b[cols], r)
    Asub, Bsub = A[rows], B[:, cols]
    FA = Operand(Asub, 0).quantize(e, np.empty(Asub.shape))
    FB = Operand(Bsub, 1).quantize(f, np.empty(Bsub.shape))
    blas = BlasEngine()
    G = blas.matmul(FA, FB, 2 ** r - 1, 2 ** r - 1)
    with np.errstate(invalid="ignore"):
        FA += (Asub != 0) & np.isfinite(Asub)
        FB += (Bsub != 0) & np.isfinite(Bsub)
    U = blas.matmul(FA, FB, 2 ** r, 2 ** r)
    c = np.minimum(nA[rows][:, None], nB[cols][None, :]).astype(np.float64)
    return certify.Refinement(rows, cols, G, U, e, f, rF[rows], cF[cols], c)


def _emulate(A, B, scheme, num_moduli, mode, engine, out, policy, want_bound):
    """``out = A @ B`` by Ozaki Scheme II; returns the info record."""
    m, k = A.shape
    n = B.shape[1]
    info = OzakiInfo(scheme, 0, mode, engine.name)
    sec = info.seconds
    ws = workspace()
    slots = _planes(m, n, k, scheme, engine)  # the store plane is sized once N is known
    buf = {name: ws.take(name, shape, dtype) for name, (shape, dtype) in slots.items()}

    t0 = time.perf_counter()
    opa, opb = Operand(A, 0), Operand(B, 1)
    stats_a, stats_b = opa.stats(), opb.stats()
    num_moduli, s, t, mask = _certified_shifts(opa, opb, stats_a, stats_b, scheme,
                                               num_moduli, mode, engine, buf, info,
                                               policy, want_bound)
    (Ea, _, bad_a, _), (Eb, _, bad_b, _) = stats_a, stats_b
    top = max(int((Ea + s).max(initial=0)), int((Eb + t).max(initial=0)))
    if top >= MAX_EXPONENT:  # pragma: no cover - excluded by the shift bounds
        raise AssertionError(f"scaled exponent {top} beyond the residue tables")
    plan = crt_plan(scheme, num_moduli)
    slots["store"] = _store(m, n, scheme, num_moduli)
    buf["store"] = ws.take("store", *slots["store"])
    info.workspace_bytes = _nbytes(slots)
    t1 = time.perf_counter()
    sec["scaling"] += t1 - t0

    for i, p in enumerate(plan.moduli):
        t0 = time.perf_counter()
        ra = opa.residues(s, p, pow2mod(p), buf["ra"])
        rb = opb.residues(t, p, pow2mod(p), buf["rb"])
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
    if info.error_bound is not None:
        # |C - AB| <= u |AB| + X and |AB| <= |C| + |C - AB| give
        # |C - AB| <= (u |C| + X) / (1 - u); the factor (1 + 2**-50) rounds up.
        eb = info.error_bound
        with np.errstate(over="ignore"):
            eb += 2.0 ** -53 * np.abs(out)
            eb *= 1.0 + 2.0 ** -50
    exact = None
    if info.uncertified and policy == "exact":
        exact = mask
        info.fallback = "exact"
        info.fallback_entries = int(mask.sum())
        info.fallback_block = (int(mask.any(axis=1).sum()), int(mask.any(axis=0).sum()))
    risk = overflow_risk(A, B, Ea, stats_a[1], Eb, stats_b[1])
    if risk is not None:
        exact = risk if exact is None else exact | risk
    if exact is not None:
        exact_entries(A, B, exact, out)
        info.exact_entries = int(exact.sum())
        if info.error_bound is not None:
            info.error_bound[exact] = exact_bound(out[exact])
    if bad_a.any() or bad_b.any():
        apply_nonfinite(A, B, bad_a, bad_b, out)
        if info.error_bound is not None:
            info.error_bound[bad_a, :] = 0.0  # exact-arithmetic values: no rounding
            info.error_bound[:, bad_b] = 0.0
    sec["reconstruction"] += time.perf_counter() - t0
    return info


# -- public functions --------------------------------------------------------

def gemm(A: Any, B: Any, C: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
         trans_a: bool = False, trans_b: bool = False,
         scheme: str = "auto", num_moduli: int | Literal["auto"] = "auto",
         mode: str = "accurate", engine: str | Engine | None = "auto",
         fallback: str | None = None, out: np.ndarray | None = None,
         return_info: bool = False, bounds: bool = False):
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
        Real numbers (Python or numpy scalars; bools and strings are refused).
    trans_a, trans_b : bool or {"N", "T", "C"}
        Use the transpose of ``A`` / ``B`` (no copy): ``True`` or the BLAS letters
        ``"T"``/``"C"`` (the same for real operands), ``False`` or ``"N"`` for none
        (letters in either case). Anything else raises ``TypeError``.
    scheme, num_moduli, mode, engine, fallback, out, return_info, bounds
        As in :func:`dgemm`. The certificate and the fallback concern
        ``op(A) op(B)``, before ``alpha`` and ``beta`` are applied.

    Returns
    -------
    ndarray, shape (m, n), float64
        And an :class:`OzakiInfo` when ``return_info`` (``gemms == 0`` and zero
        timings when no product was computed: ``alpha == 0``, an empty shape or
        ``k == 0``).
    """
    ta, tb = _transpose_flag(trans_a, "trans_a"), _transpose_flag(trans_b, "trans_b")
    alpha, beta = _scalar(alpha, "alpha"), _scalar(beta, "beta")
    A = _operand(A, "A")
    B = _operand(B, "B")
    if ta:
        A = A.T
    if tb:
        B = B.T
    m, k = A.shape
    if B.shape[0] != k:
        raise ValueError(f"inner dimensions differ: op(A) is {A.shape}, op(B) is {B.shape}")
    n = B.shape[1]
    if beta != 0.0:
        if C is None:
            raise ValueError("C is required when beta != 0")
        C = _operand(C, "C")
        if C.shape != (m, n):
            raise ValueError(f"C must have shape {(m, n)}, got {C.shape}")
    scheme, num_moduli, mode, eng = _resolve(scheme, num_moduli, mode, engine, k)
    if fallback is None:
        policy = "exact" if num_moduli == "auto" else "none"
    elif isinstance(fallback, str) and fallback == "native":
        warnings.warn('fallback="native" is now "exact": fallback entries are computed by '
                      "the exactly rounded dot product, not by BLAS", FutureWarning,
                      stacklevel=3)
        policy = "exact"
    else:
        _check_choice(fallback, "fallback", FALLBACKS)
        policy = fallback
    if out is not None:
        if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != (m, n):
            raise ValueError(f"out must be a float64 ndarray of shape {(m, n)}")
        if not out.flags.writeable:
            raise ValueError("out must be writeable")
        for name, X in (("A", A), ("B", B), ("C", C)):
            if X is not None and np.may_share_memory(out, X):
                raise ValueError(f"out may not overlap {name}")
    result = out if out is not None and out.flags.c_contiguous else np.empty((m, n))

    if alpha == 0.0 or m == 0 or n == 0 or k == 0:
        count = auto_num_moduli(scheme, k) if num_moduli == "auto" else num_moduli
        info = OzakiInfo(scheme, count, mode, eng.name,
                         bound_kind="normwise" if mode == "fast" else "componentwise")
        result[...] = 0.0  # exact: an empty sum (or alpha == 0)
        if bounds:
            info.error_bound = np.zeros((m, n))
    else:
        info = _emulate(A, B, scheme, num_moduli, mode, eng, result, policy, bounds)
    if alpha != 1.0:
        np.multiply(result, alpha, out=result)
    if beta != 0.0:
        result += beta * C
    if out is not None and result is not out:
        out[...] = result
        result = out
    return (result, info) if (return_info or bounds) else result


def dgemm(A: Any, B: Any, *, scheme: str = "auto",
          num_moduli: int | Literal["auto"] = "auto", mode: str = "accurate",
          engine: str | Engine | None = "auto", fallback: str | None = None,
          out: np.ndarray | None = None, return_info: bool = False,
          bounds: bool = False):
    """FP64-grade matrix product ``A @ B`` by Ozaki Scheme II.

    ``A`` and ``B`` are scaled to integers by powers of two, reduced modulo
    pairwise coprime moduli, multiplied exactly on a low-precision engine, and
    recombined by the Chinese Remainder Theorem. For a fixed (scheme,
    num_moduli, mode) the result is bitwise identical on every engine and for
    any number of threads.

    Parameters
    ----------
    A : array_like, shape (m, k)
        Any real array convertible to float64 (int and float32 are converted;
        64-bit integers must be exact in float64, ``|x| <= 2**53``), C or
        Fortran order or a view. Never modified. Masked arrays are refused
        (``TypeError``): fill them first.
    B : array_like, shape (k, n)
    scheme : {"auto", "int8", "fp8", "fp64"}
        The low-precision unit being emulated. ``"auto"`` picks ``"fp64"`` on
        the CPU BLAS engine (the fast path), or the scheme of a simulation engine.
    num_moduli : int or "auto"
        Number of moduli, from 2 to the scheme's table size (20). ``"auto"``
        (the default) picks the smallest count whose error bound, computed for
        this call, meets the target ``|C_ij - (AB)_ij| <= u |(AB)_ij| +
        u (|A||B|)_ij`` for every entry (accurate mode), or its normwise form
        ``u |(AB)_ij| + u ||a_i||_2 ||b_j||_2`` (fast mode); see :mod:`ozaki.certify`.
    mode : {"accurate", "fast"}
        ``"accurate"`` bounds ``|A||B|`` with one exact small-integer GEMM
        (componentwise certificate); ``"fast"`` uses row and column norms (no
        GEMM, fewer bits kept, normwise certificate).
    engine : str, Engine or "auto"
        ``"cpu-blas"`` (FP64 BLAS, the default), ``"cpu-fp8"`` (FP8 tensor-core
        simulation), ``"cpu-int8"`` (INT8 with INT32 accumulation).
    fallback : {"exact", "raise", "none"}, optional
        What to do with entries whose bound misses the target even at the
        largest count: ``"exact"`` recomputes them with the exactly rounded
        dot product (:mod:`ozaki.fallback`: correctly rounded, deterministic,
        only the rows and columns involved are read), ``"raise"`` raises
        :class:`~ozaki.certify.CertificationError` saying how many bits were
        missing and where, ``"none"`` keeps the emulated values and reports
        them in ``info``. Default: ``"exact"`` with ``num_moduli="auto"``,
        ``"none"`` with an explicit count. ``"native"``, the former name, is
        accepted with a ``FutureWarning`` and means ``"exact"``.
    out : ndarray, shape (m, n), float64, optional
        Destination; may not overlap ``A`` or ``B``.
    return_info : bool
        Also return an :class:`OzakiInfo`.
    bounds : bool
        Also compute ``info.error_bound``, the per-entry absolute error bound
        (both modes; implies ``return_info``).

    Returns
    -------
    C : ndarray, shape (m, n), float64
    info : OzakiInfo
        Only when ``return_info`` or ``bounds``.

    Raises
    ------
    TypeError
        Complex or non-numeric input, non-integer ``num_moduli``.
    ValueError
        Not 2-D, inner dimensions differ, unknown scheme, mode, engine or
        fallback, ``num_moduli`` out of range, bad ``out``.
    ozaki.certify.CertificationError
        With ``fallback="raise"``, when some entry cannot be certified.

    Notes
    -----
    Non-finite inputs follow exact arithmetic: ``C_ij`` is NaN iff row ``i`` of
    ``A`` or column ``j`` of ``B`` holds a NaN, or ``inf * 0`` or infinite
    products of both signs occur; ``+-inf`` for infinite products of one sign
    or when the exact result overflows. Exact zeros are returned as ``+0.0``.
    Entries whose ``(|A||B|)_ij`` may reach ``2**1023`` are computed by the
    exactly rounded dot product whatever the policy (:mod:`ozaki.fallback`), so
    a finite exact result that fits is finite and an overflowing one is
    ``+-inf`` with its sign.

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> A = np.arange(6.0).reshape(2, 3); B = np.ones((3, 2))
    >>> ozaki.dgemm(A, B)
    array([[ 3.,  3.],
           [12., 12.]])
    """
    return gemm(A, B, scheme=scheme, num_moduli=num_moduli, mode=mode, engine=engine,
                fallback=fallback, out=out, return_info=return_info, bounds=bounds)

"""The BLAS-form products: ``dgemm``, ``gemm`` and ``zgemm``.

Each checks its arguments (:mod:`ozaki.api.arguments`), brings its operands to
stacks (b, m, k) @ (b, k, n) (a shared operand is a stack of one), and runs
:func:`ozaki.api.calls.stacked` (the emulation, or the small-product path).
``matmul`` is in :mod:`ozaki.api.stacks`, ``prepare`` in :mod:`ozaki.api.prepared`.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .arguments import apply_transpose, operand, scalar, transpose_flag
from .calls import check_out, options, shape_of, side_check, stacked
from ..backends.engines import Engine
from .prepared import PreparedOperand
from ..core.backend import Backend
from ..core.kind import COMPLEX, REAL, Kind, kind_of

__all__ = ["dgemm", "gemm", "zgemm"]


def gemm(A: Any, B: Any, C: Any = None, *, alpha: float | complex = 1.0,
         beta: float | complex = 0.0, trans_a: bool | str = False,
         trans_b: bool | str = False, scheme: str = "auto",
         num_moduli: int | Literal["auto"] = "auto", mode: str = "accurate",
         engine: str | Engine | None = "auto", fallback: str | None = None,
         out: np.ndarray | None = None, return_info: bool = False, bounds: bool = False,
         backend: str | Backend | None = None):
    """BLAS-form product ``alpha op(A) op(B) + beta C`` with FP64-grade emulation.

    The result is ``fl(fl(alpha X) + fl(beta C))`` with ``X`` the emulated
    ``op(A) op(B)``; ``alpha == 1`` skips its product and ``beta == 0`` never
    reads ``C``; ``alpha == 0`` skips the matrix product, as BLAS does.
    ``C`` is never modified: the result is a new array (or ``out``). Complex
    operands run the complex product (:func:`zgemm`); the result is complex when
    an operand, ``alpha``, ``beta`` or ``C`` is.

    Parameters
    ----------
    A : array_like or PreparedOperand, shape (m, k), or (k, m) with ``trans_a``
    B : array_like or PreparedOperand, shape (k, n), or (n, k) with ``trans_b``
    C : array_like, shape (m, n), optional
        Required when ``beta != 0``.
    alpha, beta : float or complex
        Numbers (Python or numpy scalars; bools, strings and long double
        scalars are refused).
    trans_a, trans_b : bool or {"N", "T", "C"}
        ``op(X)``: ``"N"`` (or ``False``) ``X``, ``"T"`` (or ``True``) its
        transpose (no copy), ``"C"`` its conjugate transpose (the transpose for
        real ``X``); letters in either case. Anything else raises ``TypeError``.
        Prepared operands take ``"N"`` only.
    scheme, num_moduli, mode, engine, fallback, out, return_info, bounds, backend
        As in :func:`dgemm`. The certificate and the fallback concern
        ``op(A) op(B)``, before ``alpha`` and ``beta`` are applied.

    Returns
    -------
    ndarray, shape (m, n), float64 or complex128
        And an :class:`OzakiInfo` when ``return_info`` (``gemms == 0`` and zero
        timings when no product was computed: ``alpha == 0``, an empty shape or
        ``k == 0``).
    """
    return _gemm(A, B, C, alpha, beta, trans_a, trans_b, scheme, num_moduli, mode, engine,
                 fallback, out, return_info, bounds, backend, kind=REAL)


def _gemm(A, B, C, alpha, beta, trans_a, trans_b, scheme, num_moduli, mode, engine,
          fallback, out, return_info, bounds, backend, *, kind: Kind):
    """:func:`gemm`; a complex ``kind`` runs the complex product even on real operands (zgemm)."""
    ta, tb = transpose_flag(trans_a, "trans_a"), transpose_flag(trans_b, "trans_b")
    alpha, beta = scalar(alpha, "alpha"), scalar(beta, "beta")
    side_check(A, "left", "A")
    side_check(B, "right", "B")
    for X, name, letter in ((A, "A", ta), (B, "B", tb)):
        if isinstance(X, PreparedOperand) and (letter != "N" or X.array.ndim != 2):
            raise ValueError(f"a prepared {name} must be 2-D and used as it is "
                             f"(trans_{name.lower()}='N')")
    if not isinstance(A, PreparedOperand):
        A = apply_transpose(operand(A, "A", matmul_hint=True), ta)
    if not isinstance(B, PreparedOperand):
        B = apply_transpose(operand(B, "B", matmul_hint=True), tb)
    (m, k), (kb, n) = shape_of(A, "A"), shape_of(B, "B")
    if kb != k:
        a = "A" if ta == "N" else "op(A)"
        b_ = "B" if tb == "N" else "op(B)"
        raise ValueError(f"inner dimensions differ: {a} is {(m, k)}, {b_} is {(kb, n)}")
    is_c = kind.complex or any(X.is_complex if isinstance(X, PreparedOperand)
                           else np.iscomplexobj(X) for X in (A, B))
    if beta != 0:
        if C is None:
            raise ValueError("C is required when beta != 0")
        C = operand(C, "C")
        if C.shape != (m, n):
            raise ValueError(f"C must have shape {(m, n)}, got {C.shape}")
    result_c = is_c or isinstance(alpha, complex) or isinstance(beta, complex) or (
        beta != 0 and np.iscomplexobj(C))
    dtype = np.complex128 if result_c else np.float64
    opts = options(scheme, num_moduli, mode, engine, fallback, bounds, backend)
    check_out(out, (m, n), dtype, A, B)  # out may be C: it is written last
    a3 = A if isinstance(A, PreparedOperand) else A[None]
    b3 = B if isinstance(B, PreparedOperand) else B[None]
    # alpha == 0 skips the product: an empty inner dimension
    X, info = stacked(a3, b3, opts, kind_of(is_c), 1, m, n, 0 if alpha == 0 else k)
    X = X[0]
    if info.error_bound is not None:
        info.error_bound = info.error_bound[0]
    result = scaled_sum(X.astype(dtype, copy=False), alpha, beta, C, out)
    return (result, info) if (return_info or bounds) else result


def scaled_sum(X: np.ndarray, alpha, beta, C: np.ndarray | None,
               out: np.ndarray | None) -> np.ndarray:
    """``fl(fl(alpha X) + fl(beta C))`` (``beta C`` left out when ``beta == 0``) into
    ``out``, or into ``X`` (the product's own fresh array) when ``out`` is None.

    The same operations as ``X * alpha + beta * C`` on fresh temporaries, done in
    place: one rounding per product, one for the sum. ``fl(1 C) = C`` for a real
    ``C`` (every double, signed zeros and infinities included; a NaN stays a NaN), so
    a real ``C`` with ``beta == 1`` (the updates ``C - A B`` of ``ozaki.linalg``) is
    added as it is; a complex ``C`` is always multiplied, since the complex product
    ``(1 + 0j) C`` turns an infinite part into NaN and must stay as it was.
    """
    if alpha != 1:
        np.multiply(X, alpha, out=X)
    dest = X if out is None else out
    if beta != 0:
        term = C if beta == 1 and not np.iscomplexobj(C) else np.multiply(C, beta)
        np.add(X, term, out=dest)
    elif out is not None:
        np.copyto(out, X)
    return dest


def dgemm(A: Any, B: Any, *, scheme: str = "auto",
          num_moduli: int | Literal["auto"] = "auto", mode: str = "accurate",
          engine: str | Engine | None = "auto", fallback: str | None = None,
          out: np.ndarray | None = None, return_info: bool = False,
          bounds: bool = False, backend: str | Backend | None = None):
    """FP64-grade matrix product ``A @ B`` by Ozaki Scheme II.

    ``A`` and ``B`` are scaled to integers by powers of two, reduced modulo
    pairwise coprime moduli, multiplied exactly on a low-precision engine, and
    recombined by the Chinese Remainder Theorem. For a fixed (scheme,
    num_moduli, mode) the result is bitwise identical on every engine and for
    any number of threads. A small product (at most ``2**24`` terms ``m n k``)
    with ``num_moduli="auto"`` and unprepared operands is computed instead by
    compensated dot products that meet the same bound (:mod:`ozaki.core.compensated`,
    ``info.path == "compensated"``).

    Parameters
    ----------
    A : array_like or PreparedOperand, shape (m, k)
        Any real array convertible to float64 (bool, int, float16 and float32
        are widened exactly; 64-bit integers must be exact in float64,
        ``|x| <= 2**53``), C or Fortran order or a view. Never modified. Masked
        arrays, long double (``np.longdouble`` wider than float64) and object
        arrays (pandas nullable columns) are refused (``TypeError``, saying
        which conversion to make). 1-D operands are refused: :func:`matmul`
        takes them.
    B : array_like or PreparedOperand, shape (k, n)
    scheme : {"auto", "int8", "fp8", "fp64", "int7"}
        The low-precision unit being emulated. ``"auto"`` picks the engine's
        ``preferred_scheme`` (``"fp64"`` on the CPU BLAS engine, the unit's own
        scheme on a simulation engine or ``cpu-onednn``); with ``engine="auto"``
        too, the machine's fastest certified path for the mode
        (:func:`ozaki.backends.engines.machine_scheme`: ``"int8"`` on ``cpu-onednn``
        where oneDNN runs VNNI or AMX kernels, else ``"fp64"``, or ``"int7"`` in
        fast mode where oneDNN runs without VNNI), or :func:`ozaki.set_scheme`'s.
    num_moduli : int or "auto"
        Number of moduli, from 2 to the scheme's table size (20; 24 for
        ``"int7"``, whose moduli up to 128 carry fewer bits each). ``"auto"``
        (the default) picks the smallest count whose error bound, computed for
        this call, meets the target ``|C_ij - (AB)_ij| <= u |(AB)_ij| +
        u (|A||B|)_ij`` for every entry (accurate mode), or its normwise form
        ``u |(AB)_ij| + u ||a_i||_2 ||b_j||_2`` (fast mode); see :mod:`ozaki.core.certify`.
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
        dot product (:mod:`ozaki.core.fallback`: correctly rounded, deterministic,
        only the rows and columns involved are read), ``"raise"`` raises
        :class:`~ozaki.core.certify.CertificationError` saying how many bits were
        missing and where, ``"none"`` keeps the emulated values and reports
        them in ``info``. Default: ``"exact"`` with ``num_moduli="auto"``,
        ``"none"`` with an explicit count.
    out : ndarray, shape (m, n), float64, optional
        Destination; may not overlap ``A`` or ``B``.
    return_info : bool
        Also return an :class:`OzakiInfo`.
    bounds : bool
        Also compute ``info.error_bound``, the per-entry absolute error bound
        (both modes; implies ``return_info``).
    backend : str or Backend, optional
        What runs the passes and the exact products: ``"cpu"`` (default: compiled
        passes on ozaki's threads) or ``"numpy"`` (the pure-NumPy reference, slow),
        or an object implementing :class:`ozaki.core.backend.Backend`
        (:func:`ozaki.available_backends`). Every backend gives the same bits.

    Returns
    -------
    C : ndarray, shape (m, n), float64
    info : OzakiInfo
        Only when ``return_info`` or ``bounds``.

    Raises
    ------
    TypeError
        Complex (use :func:`zgemm`), long double or non-numeric input (object
        arrays included), a masked array, non-integer ``num_moduli``.
    ValueError
        Not 2-D (1-D: use :func:`matmul`), inner dimensions differ, unknown scheme, mode, engine or
        fallback, ``num_moduli`` out of range, bad ``out``.
    ozaki.core.certify.CertificationError
        With ``fallback="raise"``, when some entry cannot be certified.

    Notes
    -----
    Non-finite inputs follow exact arithmetic: ``C_ij`` is NaN iff row ``i`` of
    ``A`` or column ``j`` of ``B`` holds a NaN, or ``inf * 0`` or infinite
    products of both signs occur; ``+-inf`` for infinite products of one sign
    or when the exact result overflows. Exact zeros are returned as ``+0.0``.
    Entries whose ``(|A||B|)_ij`` may reach ``2**1023`` are computed by the
    exactly rounded dot product whatever the policy (:mod:`ozaki.core.fallback`), so
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
    for X, name in ((A, "A"), (B, "B")):
        if isinstance(X, PreparedOperand) and X.is_complex:
            raise TypeError(f"{name} is complex: use ozaki.zgemm")
    if not isinstance(A, PreparedOperand):
        A = operand(A, "A", complex_ok=False, matmul_hint=True)
    if not isinstance(B, PreparedOperand):
        B = operand(B, "B", complex_ok=False, matmul_hint=True)
    return gemm(A, B, scheme=scheme, num_moduli=num_moduli, mode=mode, engine=engine,
                fallback=fallback, out=out, return_info=return_info, bounds=bounds,
                backend=backend)


def zgemm(A: Any, B: Any, C: Any = None, *, alpha: complex = 1.0, beta: complex = 0.0,
          trans_a: bool | str = False, trans_b: bool | str = False, scheme: str = "auto",
          num_moduli: int | Literal["auto"] = "auto", mode: str = "accurate",
          engine: str | Engine | None = "auto", fallback: str | None = None,
          out: np.ndarray | None = None, return_info: bool = False, bounds: bool = False,
         backend: str | Backend | None = None):
    """Complex BLAS-form product ``alpha op(A) op(B) + beta C`` (BLAS zgemm semantics).

    Real and imaginary parts of a row of ``A`` share their power-of-two shift,
    and so do those of a column of ``B``, so Gauss's product (three modular
    products per modulus instead of four: ``Ar Br``, ``Ai Bi``,
    ``(Ar + Ai)(Br + Bi)``) is exact in residue arithmetic. Each part is
    certified per entry like :func:`dgemm`:
    ``|Re C - Re AB| <= u |Re AB| + u (|Ar||Br| + |Ai||Bi|)`` and
    ``|Im C - Im AB| <= u |Im AB| + u (|Ar||Bi| + |Ai||Br|)`` (accurate mode),
    the whole being the real product ``[Ar, Ai] @ [[Br, Bi], [-Bi, Br]]``
    whose decisions tie the shifts of a column's two parts. Bitwise equal on
    every engine; ``info.gemms`` counts 3 products per modulus (times 3 FP8
    digit GEMMs each on FP8 units).

    Parameters
    ----------
    A, B, C, alpha, beta, trans_a, trans_b
        As in :func:`gemm`; real inputs, prepared ones included, are taken as
        complex (the same bits as their complex128 copies). ``trans_*="C"`` is
        the conjugate transpose.
    scheme, num_moduli, mode, engine, fallback, out, return_info, bounds, backend
        As in :func:`dgemm`; ``out`` is complex128. With ``bounds=True``,
        ``info.error_bound`` is complex: its real part bounds the error of the
        real part, its imaginary part that of the imaginary part.

    Returns
    -------
    ndarray, shape (m, n), complex128
        And an :class:`OzakiInfo` when ``return_info`` or ``bounds``.

    Notes
    -----
    Non-finite values follow exact real arithmetic on the embedding: a part is
    NaN or +-inf as the real products that form it are (see :func:`dgemm`).

    Examples
    --------
    >>> import numpy as np, ozaki
    >>> A = np.array([[1 + 2j, 3j]]); B = np.array([[2 - 1j], [1j]])
    >>> ozaki.zgemm(A, B)
    array([[1.+3.j]])
    """
    if not isinstance(A, PreparedOperand):
        A = operand(A, "A", matmul_hint=True).astype(np.complex128, copy=False)
    if not isinstance(B, PreparedOperand):
        B = operand(B, "B", matmul_hint=True).astype(np.complex128, copy=False)
    alpha, beta = scalar(alpha, "alpha"), scalar(beta, "beta")
    # a real prepared operand is taken as complex too (its complex stack: the embedding
    # of the real array, as for an unprepared one); COMPLEX keeps the complex product
    # when both operands were prepared real
    return _gemm(A, B, C, complex(alpha), complex(beta), trans_a, trans_b, scheme,
                 num_moduli, mode, engine, fallback, out, return_info, bounds, backend,
                 kind=COMPLEX)

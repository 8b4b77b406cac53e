"""Mixed-precision iterative refinement, :func:`solve_refined` (in the spirit of HPL-MxP):
LU at a reduced count of moduli (:mod:`ozaki.linalg.precision`), refined in FP64 until
the componentwise backward error meets ``tol``, as LAPACK's xGERFS. Theory, the
criterion and the defaults: docs/linalg.rst, "Mixed-precision refinement".

Determinism: the factors are :func:`~ozaki.linalg.lu_factor`'s (its kernels); the
corrections are substitutions with them in the same kernels
(:func:`~ozaki.linalg.lu.substitute`); every product with ``A`` is :func:`ozaki.gemm`'s
(residuals, GMRES's products); ``|A||x|`` and ``||A||_inf`` (as ``|A| 1``) are sums of
non-negative terms in a fixed order (the backends' ``abs_product``); GMRES-IR
(:mod:`ozaki.linalg.gmres`) fixes its bits by the same argument; maxima are exact,
other array arithmetic is elementwise. No numpy BLAS call makes a result bit: the bits
depend only on the inputs, the arguments and the product options, not on the thread
count, nor on the engine for a given scheme and mode. Complex magnitudes are LAPACK's
``cabs1 = |Re| + |Im|`` (one rounding, no ``hypot``); real ones are exact.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api.facts import resolve_options
from ..core.moduli import auto_num_moduli
from .arguments import (DEFAULT_BLOCK_SIZE, block_size_of, matrix, product_options, rhs,
                        same_kind, solve_dtype)
from .info import LinalgInfo, Recorder
from .iterates import SAFE_MIN, Iterates
from .lu import factor as lu_in_place
from .precision import U, moduli_for_precision, unit_roundoff

__all__ = ["solve_refined", "RefinementInfo", "DEFAULT_FACTOR_PRECISION", "DEFAULT_TOL",
           "SAFE_MIN", "FACTOR_MODE", "METHODS", "PHASES"]

#: Default ``u_f = sqrt(u) = 2**-26.5``: classical refinement converges for
#: ``kappa(A) < 1/u_f ~ 1e8`` (HPL's matrices, ``kappa ~ 1e4..1e6``, in one or two
#: steps), and GMRES-IR's range ``kappa(A) u_f < u**-1/2`` reaches ``kappa(A) ~ 1/u``,
#: every system FP64 can solve. A larger ``u_f`` saves few more moduli (the cost falls
#: by one ``N``-th per modulus: no step as from FP64 to FP16) for more steps and more
#: fallbacks, each a second factorisation.
DEFAULT_FACTOR_PRECISION = math.sqrt(U)

#: Default ``tol = 4u`` on ``omega``: ``fl(x*)`` has ``|b - A fl(x*)| <= u |A||x*|``, and
#: the certified residual product errs by up to ``2u |A||x| + u |r|`` (plus ``u s``
#: of underflow), all componentwise: a measured ``omega`` near ``3u`` can be the best
#: there is; ``4u`` is the least power-of-two multiple of ``u`` above that floor.
DEFAULT_TOL = 4 * U

#: The factorisation's mode: its products miss the FP64-grade certificate by design, so
#: accurate mode's componentwise certificate (one more GEMM per update, the floor
#: GEMM) would buy nothing; what refinement needs is a small normwise backward error
#: of the factors, which fast mode's normwise bound gives (docs/linalg.rst).
FACTOR_MODE = "fast"

#: The refinement methods.
METHODS = ("auto", "classical", "gmres")

#: Phases of :attr:`RefinementInfo.seconds`.
PHASES = ("factor", "residual", "correction", "gmres", "other")


@dataclass
class RefinementInfo:
    """What one :func:`solve_refined` call did (``return_info=True``).

    Attributes
    ----------
    method, scheme : str
        Asked for (``"auto"``, ``"classical"`` or ``"gmres"``); the products' scheme.
    steps : list of str
        Kind of each refinement step in order (``"classical"``, ``"gmres"``), the
        fallback's included; ``iterations`` of them on the reduced-count factors.
    iterations, gmres_iterations : int
        Steps on the reduced factors; Krylov iterations over all GMRES steps.
    componentwise_backward_errors, backward_errors : list of float
        The componentwise ``omega`` (**the stopping criterion**) and the normwise
        ``||r||_inf / (||A||_inf ||x||_inf + ||b||_inf)``, each the largest over the
        columns of ``b``, after the first solve and after each step;
        ``componentwise_backward_error``, ``backward_error``: the returned ``x``'s.
    tol, factor_precision : float
        The tolerance on ``omega`` and ``u_f`` used (dimensionless).
    factor_num_moduli, full_num_moduli, residual_num_moduli : int
        The factorisation's reduced count; the FP64-grade count at its inner
        dimension ``min(block_size, n)``; the last residual product's (0 when it took
        the small-product path, which meets the same bound).
    converged, fell_back : bool
        ``componentwise_backward_error <= tol``; ``a`` factored again at the full count.
    factor_info, fallback_info : LinalgInfo or None
        The factorisations' records (``fallback_info`` when it ran).
    seconds : dict
        Wall time per phase: ``factor`` (both factorisations), ``residual``,
        ``correction`` (first solve and classical steps), ``gmres`` (whole GMRES
        steps), ``other``; ``total_seconds`` in all.
    """

    method: str
    tol: float
    factor_precision: float
    scheme: str
    factor_num_moduli: int
    full_num_moduli: int
    steps: list = field(default_factory=list)
    iterations: int = 0
    gmres_iterations: int = 0
    componentwise_backward_errors: list = field(default_factory=list)
    backward_errors: list = field(default_factory=list)
    componentwise_backward_error: float = math.inf
    backward_error: float = math.inf
    residual_num_moduli: int = 0
    converged: bool = False
    fell_back: bool = False
    factor_info: LinalgInfo | None = None
    fallback_info: LinalgInfo | None = None
    seconds: dict = field(default_factory=lambda: {p: 0.0 for p in PHASES})
    total_seconds: float = 0.0


def _max_iter(value: Any, tol: float) -> int:
    if value is None:  # one bit per step from omega <= 1 (|b - Ax| <= |b| + |A||x|)
        return math.ceil(-math.log2(tol)) + 1
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"max_iter must be a non-negative int or None, got "
                        f"{type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"max_iter must be a non-negative int or None, got {int(value)}")
    return int(value)


def _factor(A, nb, opts, info):
    t = time.perf_counter()
    W = np.array(A, copy=True)
    rec = Recorder("lu_factor", W.shape, nb, opts)
    piv, zero = lu_in_place(W, nb, rec)
    info.seconds["factor"] += time.perf_counter() - t
    return W, piv, zero, rec.finish()


def _warn(message: str) -> None:
    try:
        from scipy.linalg import LinAlgWarning as category
    except ImportError:  # pragma: no cover - scipy is a dependency of the tests only
        category = RuntimeWarning
    warnings.warn(message, category, stacklevel=4)


def _refine(A, B, nb, f_opts, opts, method, limit, tol, info):
    """The refined solution (K columns); ``info`` records how."""
    ref = Iterates(A, B, opts, info)
    LU, piv, zero, info.factor_info = _factor(A, nb, f_opts, info)
    if zero < 0:  # else an exact zero pivot at the reduced count: the full count, from x = 0
        ref.X[:] = ref.solve(LU, piv, B)
    ref.R, ref.omega, ref.eta = ref.residual(ref.X, slice(None))
    ref.record(ref.omega, ref.eta, False)
    if zero < 0:
        kinds = ("classical", "gmres") if method == "auto" else (method,)
        info.iterations = ref.steps(LU, piv, kinds, limit, tol)
    if zero >= 0 or np.max(ref.omega) > tol:
        why = "met an exactly zero pivot" if zero >= 0 else f"did not reach tol {tol:.3g}"
        info.fell_back = True
        LU, piv, zero, info.fallback_info = _factor(A, nb, opts, info)
        if zero >= 0:
            raise np.linalg.LinAlgError("Matrix is singular.")
        lost = ~np.isfinite(ref.omega)  # NaN or Inf iterates start again from x = 0
        ref.X[:, lost], ref.R[:, lost], ref.eta[lost] = 0, B[:, lost], np.inf
        ref.steps(LU, piv, ("classical",), _max_iter(None, tol), tol)
        _warn(f"solve_refined: the refinement of the LU at {info.factor_num_moduli} moduli "
              f"(factor_precision {info.factor_precision:.3g}) {why}; "
              f"a factorisation at the full count ({info.full_num_moduli}) was needed")
    info.componentwise_backward_error = float(np.max(ref.omega))
    info.backward_error = float(np.max(ref.eta))
    info.converged = info.componentwise_backward_error <= tol
    if not info.converged:
        _warn(f"solve_refined: componentwise backward error "
              f"{info.componentwise_backward_error:.3g} above tol {tol:.3g} "
              f"(the matrix may be too ill-conditioned for FP64)")
    return ref.X


def solve_refined(a: Any, b: Any, *, tol: float | None = None,
                  factor_precision: float | None = None, method: str = "auto",
                  max_iter: int | None = None, block_size: int = DEFAULT_BLOCK_SIZE,
                  check_finite: bool = True, overwrite_a: bool = False,
                  overwrite_b: bool = False, return_info: bool = False, **product_options_):
    """Solve ``a x = b``: LU at reduced precision, then refinement to FP64 accuracy.

    ``a`` is factored as :func:`~ozaki.linalg.lu_factor` does, with its products at
    :func:`~ozaki.linalg.moduli_for_precision` ``(factor_precision, scheme, block_size)``
    moduli, in fast mode (:data:`FACTOR_MODE`: uncertified by design, they need no
    componentwise certificate) on the resolved ``scheme``; then, in FP64, residuals
    ``r = b - a x`` by :func:`ozaki.gemm` (FP64-grade) and corrections from the reduced
    factors (classical, or GMRES-IR: GMRES preconditioned by them) until every column's
    componentwise backward error
    ``omega = max_i |r_i| / (|a||x| + |b| + s)_i`` (``s = (n + 1) 2**-1022``: LAPACK's
    xGERFS criterion) is at most ``tol``. A step gaining less than a bit stalls
    (``"auto"`` then turns to GMRES); without convergence in ``max_iter`` steps, ``a``
    is factored again at the full count and refined classically from the best iterate.
    See docs/linalg.rst for the theory.

    Parameters
    ----------
    a : (N, N) array_like
        As :func:`~ozaki.linalg.solve`.
    b : (N,) or (N, K) array_like
    tol : float, optional
        Componentwise backward error to reach, in (0, 1); default ``4u``
        (:data:`DEFAULT_TOL`). It bounds the normwise one too.
    factor_precision : float, optional
        ``u_f``, the unit roundoff asked of the factorisation's products, in (0, 1);
        default ``sqrt(u)`` (:data:`DEFAULT_FACTOR_PRECISION`): classical refinement
        covers ``kappa(a)`` up to about ``1e8``, GMRES-IR up to about ``1/u``.
    method : {"auto", "classical", "gmres"}
    max_iter : int, optional
        Refinement steps on the reduced factors (0: the first solve only); default
        ``ceil(-log2(tol)) + 1``, all that the one-bit-per-step rule allows.
    block_size, check_finite
        As :func:`~ozaki.linalg.solve`.
    overwrite_a, overwrite_b : bool
        Accepted as scipy's; every residual reads ``a`` and ``b``, so neither is
        ever modified.
    return_info : bool
        Also return a :class:`RefinementInfo`.
    **product_options_
        ``scheme``, ``mode``, ``engine``, ``fallback`` of :func:`ozaki.gemm`.
        ``fallback`` concerns the full-count products (the reduced count misses the
        FP64-grade certificate by design and runs with ``fallback="none"``);
        ``num_moduli`` is refused: this function chooses the counts. ``omega``'s
        guarantee needs the componentwise certificate of accurate mode (the default).

    Returns
    -------
    x : ndarray, the shape of ``b``
        scipy.linalg.solve's dtype (float32 for single precision inputs).
    info : RefinementInfo
        With ``return_info``.

    Warns
    -----
    scipy.linalg.LinAlgWarning
        When the full-count factorisation was needed (``u_f`` too large for this
        matrix: a second factorisation), and when ``tol`` is still missed.

    Raises
    ------
    LinAlgError
        "Matrix is singular." (an exact zero pivot at the full count).
    ValueError, TypeError
        As :func:`~ozaki.linalg.solve`; bad ``tol``, ``factor_precision``,
        ``method`` or ``max_iter``; ``num_moduli`` given.

    Examples
    --------
    >>> import numpy as np
    >>> from ozaki import linalg
    >>> A = np.random.default_rng(0).uniform(-0.5, 0.5, (300, 300))
    >>> x, info = linalg.solve_refined(A, np.ones(300), return_info=True)
    >>> info.converged, info.factor_num_moduli < info.full_num_moduli
    (True, True)
    """
    start = time.perf_counter()
    nb = block_size_of(block_size)
    if "num_moduli" in product_options_:
        raise TypeError("solve_refined() chooses the counts of moduli: give factor_precision "
                        "(the factorisation's unit roundoff), not num_moduli")
    opts = product_options("solve_refined", product_options_)
    tol = unit_roundoff(tol, DEFAULT_TOL, "tol")
    u_f = unit_roundoff(factor_precision, DEFAULT_FACTOR_PRECISION, "factor_precision")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    limit = _max_iter(max_iter, tol)
    A, a0, _ = matrix(a, "a", check_finite, False, read_only=True)  # factored in a copy
    B, b0, _ = rhs(b, A.shape[0], check_finite, False, A.shape)
    A, B = same_kind(A, B)  # float64, or complex128 when either is complex
    scheme = resolve_options(opts.get("scheme", "auto"), "auto", opts.get("mode", "accurate"),
                             opts.get("engine", "auto")).scheme
    k = max(1, min(nb, A.shape[0]))  # the trailing updates' inner dimension
    f_opts = {**{o: v for o, v in opts.items() if o != "fallback"}, "scheme": scheme,
              "mode": FACTOR_MODE, "num_moduli": moduli_for_precision(u_f, scheme, k)}
    info = RefinementInfo(method, tol, u_f, scheme, f_opts["num_moduli"],
                          auto_num_moduli(scheme, k))
    if B.size:
        X = _refine(A, B, nb, f_opts, opts, method, limit, tol, info)
    else:
        X = np.zeros_like(B)
        info.converged, info.backward_error, info.componentwise_backward_error = True, 0.0, 0.0
    x = X.reshape(b0.shape)
    dt = solve_dtype(a0, b0)
    if dt != x.dtype:
        x = x.astype(dt)
    info.total_seconds = time.perf_counter() - start
    known = math.fsum(v for p, v in info.seconds.items() if p != "other")
    info.seconds["other"] = max(0.0, info.total_seconds - known)
    return (x, info) if return_info else x

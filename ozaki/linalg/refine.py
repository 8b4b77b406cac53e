"""Mixed-precision iterative refinement, :func:`solve_refined` (in the spirit of HPL-MxP).

Factor ``A = P L U`` with the emulated products at a *reduced* count of moduli (unit
roundoff ``u_f > u = 2**-53``), then refine in FP64 with residuals ``r = b - A x`` by
the FP64-grade product until the normwise backward error
``||r||_inf / (||A||_inf ||x||_inf + ||b||_inf)`` is at most ``tol``. Theory, the
choice of the count and of the defaults: docs/linalg.rst, "Mixed-precision refinement".

Count of moduli (:func:`precision_of_moduli`): the auto count (:func:`ozaki.auto_num_moduli`)
is FP64-grade, error about ``u (|A||B|)_ij``; each modulus ``p`` fewer takes
``log2 p`` bits from ``log2 P``, half from each operand, so the error grows by
``sqrt(p)`` (docs/accuracy.rst): ``u_N = u 2**((log2 P_auto - log2 P_N) / 2)``, an
upper estimate (the tests measure it).

Determinism: the factors are :func:`~ozaki.linalg.lu_factor`'s (its kernels); every
product is :func:`ozaki.gemm`'s (residuals, ``||A||_inf`` as ``|A| 1``, GMRES's
products with ``A``); GMRES-IR's correction is :func:`ozaki.linalg.gmres.gmres`, whose
bits are fixed by the same argument (gemm products, ``math.fsum`` norms, its small
least-squares problem in Python floats in a fixed order); maxima are exact; other
array arithmetic is elementwise. No numpy BLAS call makes a result bit: the bits depend
only on the inputs, the arguments and the product options, not on the thread count, nor
on the engine for a given scheme and mode. Complex magnitudes are LAPACK's
``cabs1 = |Re| + |Im|`` (no ``hypot``).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api.facts import moduli as scheme_moduli
from ..api.facts import resolve_options
from ..api.front import gemm
from ..core.moduli import auto_num_moduli
from .arguments import (DEFAULT_BLOCK_SIZE, block_size_of, matrix, product_options, rhs,
                        same_kind, solve_dtype)
from .gmres import gmres, gmres_budget
from .info import LinalgInfo, Recorder
from .lu import factor as lu_in_place
from .lu import solve_factored

__all__ = ["solve_refined", "RefinementInfo", "precision_of_moduli", "moduli_for_precision",
           "DEFAULT_FACTOR_PRECISION", "DEFAULT_TOL", "METHODS", "PHASES"]

#: FP64's unit roundoff.
U = 2.0 ** -53

#: Default ``u_f = sqrt(u) = 2**-26.5``: classical refinement converges for
#: ``kappa(A) < 1/u_f ~ 1e8`` (HPL's matrices, ``kappa ~ 1e4..1e6``, in one or two
#: steps), and GMRES-IR's range ``kappa(A) u_f < u**-1/2`` reaches ``kappa(A) ~ 1/u``,
#: every system FP64 can solve. A larger ``u_f`` saves few more moduli (the cost falls
#: by one ``N``-th per modulus: no step as from FP64 to FP16) for more steps and more
#: fallbacks, each a second factorisation.
DEFAULT_FACTOR_PRECISION = math.sqrt(U)

#: Default ``tol = 4u``: ``fl(x*)`` has ``|b - A fl(x*)| <= u |A||x*|`` and the
#: certified residual product adds up to ``2u |A||x| + u |r|``, so a measured backward
#: error near ``3u`` can be the best there is; ``4u`` is the least power-of-two
#: multiple of ``u`` above that bound (typical ones are far below; HPL allows ``16 n u``).
DEFAULT_TOL = 4 * U

#: The refinement methods.
METHODS = ("auto", "classical", "gmres")

#: Phases of :attr:`RefinementInfo.seconds`.
PHASES = ("factor", "residual", "correction", "gmres", "other")


@dataclass
class RefinementInfo:
    """What one :func:`solve_refined` call did (``return_info=True``).

    Attributes
    ----------
    method : str
        Asked for: ``"auto"``, ``"classical"`` or ``"gmres"``.
    steps : list of str
        Kind of each refinement step in order (``"classical"``, ``"gmres"``), the
        fallback's included; ``iterations`` of them on the reduced-count factors.
    iterations, gmres_iterations : int
        Steps on the reduced factors; Krylov iterations over all GMRES steps.
    backward_errors : list of float
        Normwise backward error (the largest over the columns of ``b``) after the
        first solve, then after each step. ``backward_error``: the returned ``x``'s.
    tol, factor_precision : float
        The tolerance and ``u_f`` used (dimensionless).
    scheme : str
    factor_num_moduli, full_num_moduli, residual_num_moduli : int
        The factorisation's reduced count; the FP64-grade count at its inner
        dimension ``min(block_size, n)``; the last residual product's (0 when it took
        the small-product path, which meets the same bound).
    converged, fell_back : bool
        ``backward_error <= tol``; ``a`` factored again at the full count.
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
    backward_errors: list = field(default_factory=list)
    backward_error: float = math.inf
    residual_num_moduli: int = 0
    converged: bool = False
    fell_back: bool = False
    factor_info: LinalgInfo | None = None
    fallback_info: LinalgInfo | None = None
    seconds: dict = field(default_factory=lambda: {p: 0.0 for p in PHASES})
    total_seconds: float = 0.0


def precision_of_moduli(scheme: str, num_moduli: int, k: int) -> float:
    """Unit roundoff ``u_N`` of a product at ``num_moduli`` moduli (an upper estimate).

    ``u 2**((log2 P_auto - log2 P_N) / 2)``: ``P_auto`` the product of the auto
    count's moduli at inner dimension ``k`` (FP64-grade), ``P_N`` of the first
    ``num_moduli``; ``u`` from the auto count on.

    Parameters
    ----------
    scheme : {"int8", "fp8", "fp64"}
    num_moduli : int
        At least 2.
    k : int
        The product's inner dimension.

    Returns
    -------
    float
        Error bound in units of ``(|A||B|)_ij`` (dimensionless).
    """
    full = auto_num_moduli(scheme, k)
    if num_moduli >= full:
        return U
    logs = [math.log2(p) for p in scheme_moduli(scheme)[:full]]
    return U * 2.0 ** (math.fsum(logs[num_moduli:]) / 2)


def moduli_for_precision(precision: float, scheme: str, k: int) -> int:
    """The least count ``N >= 2`` with ``precision_of_moduli(scheme, N, k) <= precision``
    (the auto count, never more, when ``precision`` is below every reduced count's)."""
    full = auto_num_moduli(scheme, k)
    return next((n for n in range(2, full) if precision_of_moduli(scheme, n, k) <= precision),
                full)


def _unit_interval(value: Any, default: float, name: str) -> float:
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number in (0, 1), got "
                        f"{type(value).__name__} {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {float(value)!r}")
    return float(value)


def _max_iter(value: Any, tol: float) -> int:
    if value is None:  # one bit per step from a backward error <= 1: never more steps
        return math.ceil(-math.log2(tol)) + 1
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"max_iter must be a non-negative int or None, got "
                        f"{type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"max_iter must be a non-negative int or None, got {int(value)}")
    return int(value)


def _mag(X: np.ndarray) -> np.ndarray:
    """``|x|``, or LAPACK's ``cabs1 = |Re x| + |Im x|`` for complex (one rounding)."""
    return np.abs(X.real) + np.abs(X.imag) if np.iscomplexobj(X) else np.abs(X)


class _Refiner:
    """The products and solves of one call, timed into its :class:`RefinementInfo`."""

    def __init__(self, A, nb, opts, info):
        self.A, self.nb, self.opts, self.info = A, nb, opts, info
        ones = np.ones((A.shape[0], 1))
        self.a_norm = float(np.max(gemm(_mag(A), ones, **opts), initial=0.0))  # ||A||_inf
        self.budget = gmres_budget(A.shape[0])  # Krylov iterations left

    def _add(self, phase, t):
        self.info.seconds[phase] += time.perf_counter() - t

    def product(self, X):
        """``A X`` by the FP64-grade product."""
        P, pinfo = gemm(self.A, X, return_info=True, **self.opts)
        self.info.residual_num_moduli = int(pinfo.num_moduli)
        return P

    def residual(self, X, B):
        """``fl(B - A X)`` and each column's backward error (``inf`` for NaN)."""
        t = time.perf_counter()
        with np.errstate(all="ignore"):
            R = B - self.product(X)
            r = np.max(_mag(R), axis=0, initial=0.0)
            den = (self.a_norm * np.max(_mag(X), axis=0, initial=0.0)
                   + np.max(_mag(B), axis=0, initial=0.0))
            err = np.where(r == 0, 0.0, r / den)
        self._add("residual", t)
        return R, np.where(np.isnan(err), np.inf, err)

    def solve(self, LU, piv, R, phase="correction"):
        """``(LU)^-1 R``, a new array, with the full-count products."""
        t = time.perf_counter()
        X = np.array(R, copy=True)
        with np.errstate(all="ignore"):
            solve_factored(LU, piv, X, 0, self.nb, Recorder("lu_solve", LU.shape, self.nb,
                                                            self.opts))
        if phase:
            self._add(phase, t)
        return X

    def gmres(self, LU, piv, r, tau):
        """GMRES-IR's correction: :func:`~ozaki.linalg.gmres.gmres` on ``(LU)^-1 A d =
        (LU)^-1 r`` to ``tau`` times the first residual, within the call's budget."""
        t = time.perf_counter()
        z = self.solve(LU, piv, r[:, None], phase=None)[:, 0]
        d, its = gmres(lambda v: self.solve(LU, piv, self.product(v[:, None]), phase=None)[:, 0],
                       z, tau, self.budget, self.opts)
        self.budget -= its
        self.info.gmres_iterations += its
        self._add("gmres", t)
        return d


def _steps(ref, LU, piv, X, R, best, B, kinds, limit, tol, info):
    """Refinement steps on the columns above ``tol``, at most ``limit``; returns how many.

    A step must halve the largest backward error of the columns it updates (gain a
    bit): else it stalls, and the next method of ``kinds`` takes over (``auto``:
    classical, then GMRES), or the steps end. Each column keeps its best iterate
    (``X``, ``R``, ``best`` in place).
    """
    taken, which = 0, 0
    while taken < limit and which < len(kinds) and np.max(best) > tol:
        cols = np.flatnonzero(best > tol)
        before = float(np.max(best[cols]))
        if kinds[which] == "classical":
            D = ref.solve(LU, piv, R[:, cols])
        else:  # ask GMRES for the reduction still needed
            D = np.stack([ref.gmres(LU, piv, R[:, c], min(0.5, max(tol / best[c], U)))
                          for c in cols], axis=1)
        with np.errstate(all="ignore"):
            Xn = X[:, cols] + D
        Rn, err = ref.residual(Xn, B[:, cols])
        taken += 1
        info.steps.append(kinds[which])
        info.backward_errors.append(float(max(np.max(err), np.max(best, where=best <= tol,
                                                                  initial=0.0))))
        better = (err < best[cols]) | np.isinf(best[cols])  # no finite iterate yet: the last
        keep = cols[better]
        X[:, keep], R[:, keep], best[keep] = Xn[:, better], Rn[:, better], err[better]
        if not np.max(err) <= before / 2 or np.isinf(np.max(err)):
            which += 1
    return taken


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


def _refine(A, B, X, nb, f_opts, opts, method, limit, tol, info):
    """Fill ``X`` (zeros, (n, K)) with the refined solution; ``info`` records how."""
    ref = _Refiner(A, nb, opts, info)
    LU, piv, zero, info.factor_info = _factor(A, nb, f_opts, info)
    if zero < 0:  # else an exact zero pivot at the reduced count: the full count, from x = 0
        X[:] = ref.solve(LU, piv, B)
    R, best = ref.residual(X, B)
    info.backward_errors.append(float(np.max(best)))
    if zero < 0:
        kinds = ("classical", "gmres") if method == "auto" else (method,)
        info.iterations = _steps(ref, LU, piv, X, R, best, B, kinds, limit, tol, info)
    if zero >= 0 or np.max(best) > tol:
        why = "met an exactly zero pivot" if zero >= 0 else f"did not reach tol {tol:.3g}"
        info.fell_back = True
        LU, piv, zero, info.fallback_info = _factor(A, nb, opts, info)
        if zero >= 0:
            raise np.linalg.LinAlgError("Matrix is singular.")
        lost = ~np.isfinite(best)  # NaN or Inf iterates start again from x = 0
        X[:, lost], R[:, lost], best[lost] = 0, B[:, lost], np.inf
        _steps(ref, LU, piv, X, R, best, B, ("classical",), _max_iter(None, tol), tol, info)
        _warn(f"solve_refined: the refinement of the LU at {info.factor_num_moduli} moduli "
              f"(factor_precision {info.factor_precision:.3g}) {why}; "
              f"a factorisation at the full count ({info.full_num_moduli}) was needed")
    info.backward_error = float(np.max(best))
    info.converged = info.backward_error <= tol
    if not info.converged:
        _warn(f"solve_refined: backward error {info.backward_error:.3g} above tol {tol:.3g} "
              f"(the matrix may be too ill-conditioned for FP64)")


def solve_refined(a: Any, b: Any, *, tol: float | None = None,
                  factor_precision: float | None = None, method: str = "auto",
                  max_iter: int | None = None, block_size: int = DEFAULT_BLOCK_SIZE,
                  check_finite: bool = True, overwrite_a: bool = False,
                  overwrite_b: bool = False, return_info: bool = False, **product_options_):
    """Solve ``a x = b``: LU at reduced precision, then refinement to FP64 accuracy.

    ``a`` is factored as :func:`~ozaki.linalg.lu_factor` does, with its products at
    :func:`moduli_for_precision` ``(factor_precision, scheme, block_size)`` moduli.
    Then, in FP64: residual ``r = b - a x`` by :func:`ozaki.gemm` at the FP64-grade
    count, correction from the reduced factors (classical, or GMRES-IR: GMRES
    left-preconditioned by them), until every column's normwise backward error
    ``||r||_inf / (||a||_inf ||x||_inf + ||b||_inf)`` is at most ``tol``. A step gaining
    less than a bit stalls (``"auto"`` then turns to GMRES). Without convergence in
    ``max_iter`` steps, ``a`` is factored again at the full count and refined
    classically from the best iterate. See docs/linalg.rst for the theory.

    Parameters
    ----------
    a : (N, N) array_like
        As :func:`~ozaki.linalg.solve`.
    b : (N,) or (N, K) array_like
    tol : float, optional
        Backward error to reach, in (0, 1); default ``4u`` (:data:`DEFAULT_TOL`).
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
        ``num_moduli`` is refused: this function chooses the counts.

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
    tol = _unit_interval(tol, DEFAULT_TOL, "tol")
    u_f = _unit_interval(factor_precision, DEFAULT_FACTOR_PRECISION, "factor_precision")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
    limit = _max_iter(max_iter, tol)
    A, a0, _ = matrix(a, "a", check_finite, False)
    B, b0, _ = rhs(b, A.shape[0], check_finite, False, A.shape)
    A, B = same_kind(A, B)  # float64, or complex128 when either is complex
    scheme = resolve_options(opts.get("scheme", "auto"), "auto", opts.get("mode", "accurate"),
                             opts.get("engine", "auto")).scheme
    k = max(1, min(nb, A.shape[0]))  # the trailing updates' inner dimension
    f_opts = {**{o: v for o, v in opts.items() if o != "fallback"},
              "num_moduli": moduli_for_precision(u_f, scheme, k)}
    info = RefinementInfo(method, tol, u_f, scheme, f_opts["num_moduli"],
                          auto_num_moduli(scheme, k))
    X = np.zeros_like(B)
    if B.size:
        _refine(A, B, X, nb, f_opts, opts, method, limit, tol, info)
    else:
        info.converged, info.backward_error = True, 0.0
    x = X.reshape(b0.shape)
    dt = solve_dtype(a0, b0)
    if dt != x.dtype:
        x = x.astype(dt)
    info.total_seconds = time.perf_counter() - start
    known = math.fsum(v for p, v in info.seconds.items() if p != "other")
    info.seconds["other"] = max(0.0, info.total_seconds - known)
    return (x, info) if return_info else x

"""ozaki.linalg.solve_refined: LU at a reduced count of moduli, refined to FP64 accuracy."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import scipy.linalg
from scipy.linalg import LinAlgWarning
from threadpoolctl import threadpool_limits

import ozaki
from ozaki import linalg as ol
from ozaki.linalg.gmres import gmres_ir
from ozaki.linalg.refine import DEFAULT_FACTOR_PRECISION, DEFAULT_TOL, SAFE_MIN

U = 2.0 ** -53


def hpl_matrix(rng, n):
    return rng.uniform(-0.5, 0.5, (n, n))


def randsvd(rng, n, kappa, mode):
    """``Q1 diag(s) Q2^T`` with 2-norm condition ``kappa``: ``s`` geometric from 1 to
    ``1/kappa`` (mode 3), or ones and one ``1/kappa`` (mode 2), as LAPACK's latms."""
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.geomspace(1.0, 1.0 / kappa, n) if mode == 3 else np.r_[np.ones(n - 1), 1 / kappa]
    return (q1 * s) @ q2.T


def reference_backward_errors(A, x, b):
    """Normwise and componentwise backward errors with each residual entry, ``||A||_inf``
    and ``(|A||x|)_i`` by math.fsum (correctly rounded sums of the exact products'
    roundings: independent of ozaki); the largest over the columns."""
    x2, b2 = x.reshape(len(b), -1), b.reshape(len(b), -1)
    normwise = componentwise = 0.0
    a_norm = max(math.fsum(abs(v) for v in row) for row in A.tolist())
    for j in range(x2.shape[1]):
        xj, bj = x2[:, j].tolist(), b2[:, j].tolist()
        r = [abs(math.fsum([*(a * xi for a, xi in zip(row, xj)), -bi]))
             for row, bi in zip(A.tolist(), bj)]
        den = [math.fsum([*(abs(a * xi) for a, xi in zip(row, xj)), abs(bi)])
               for row, bi in zip(A.tolist(), bj)]
        normwise = max(normwise, max(r) / (a_norm * max(map(abs, xj)) + max(map(abs, bj))))
        componentwise = max(componentwise, *(ri / di if ri else 0.0 for ri, di in zip(r, den)))
    return normwise, componentwise


def exact_componentwise_backward_error(A, x, b):
    """Oettli-Prager's ``max_i |b - A x|_i / (|A||x| + |b|)_i``, exactly (fractions)."""
    worst = Fraction(0)
    for row, bi in zip(A.tolist(), b.tolist()):
        terms = [Fraction(a) * Fraction(xi) for a, xi in zip(row, x.tolist())]
        r = abs(Fraction(bi) - sum(terms))
        worst = max(worst, r / (sum(map(abs, terms)) + abs(Fraction(bi))) if r else r)
    return worst


def check_solution(A, x, b, info):
    """``info``'s componentwise backward error meets ``tol`` (and bounds the normwise
    one), and the true ones are within the residual product's contract of ``info``'s:
    ``|r_computed - r| <= u|r| + 2u |A||x|`` entrywise, so the true backward errors
    exceed the computed ones by at most about ``2u`` (``3u`` against this reference,
    whose products round)."""
    assert info.converged and info.componentwise_backward_error <= info.tol
    assert info.backward_error <= info.componentwise_backward_error * (1 + 8 * U)
    assert len(info.backward_errors) == len(info.componentwise_backward_errors) \
        == len(info.steps) + 1
    # each column keeps its best iterate
    assert info.componentwise_backward_error <= info.componentwise_backward_errors[-1]
    normwise, componentwise = reference_backward_errors(A, x, b)
    assert normwise <= info.backward_error + 3.01 * U
    assert componentwise <= info.componentwise_backward_error + 3.01 * U


# --- the count of moduli ---------------------------------------------------------------

@pytest.mark.parametrize("scheme", ozaki.SCHEMES)
def test_reduced_count_is_smaller_and_least(scheme):
    full = ozaki.auto_num_moduli(scheme, 128)
    n = ol.moduli_for_precision(DEFAULT_FACTOR_PRECISION, scheme, 128)
    assert 2 <= n < full
    assert ol.precision_of_moduli(scheme, n, 128) <= DEFAULT_FACTOR_PRECISION
    assert n == 2 or ol.precision_of_moduli(scheme, n - 1, 128) > DEFAULT_FACTOR_PRECISION
    assert ol.precision_of_moduli(scheme, full, 128) == U
    assert ol.moduli_for_precision(U / 2, scheme, 128) == full  # never more than auto


@given(st.floats(2.0 ** -60, 0.5), st.sampled_from(ozaki.SCHEMES),
       st.integers(1, 2 ** 16))
@settings(max_examples=40)
def test_moduli_for_precision_is_the_least_count(precision, scheme, k):
    n = ol.moduli_for_precision(precision, scheme, k)
    full = ozaki.auto_num_moduli(scheme, k)
    assert 2 <= n <= full
    assert n == full or ol.precision_of_moduli(scheme, n, k) <= precision
    assert n == 2 or ol.precision_of_moduli(scheme, n - 1, k) > precision
    # each modulus p dropped multiplies the estimate by sqrt(p)
    if n < full:
        p = ozaki.moduli(scheme)[n]
        ratio = ol.precision_of_moduli(scheme, n, k) / ol.precision_of_moduli(scheme, n + 1, k)
        assert ratio == pytest.approx(math.sqrt(p), rel=1e-12) or n + 1 == full


@pytest.mark.parametrize("scheme", ozaki.SCHEMES)
@pytest.mark.parametrize("precision", [2.0 ** -12, DEFAULT_FACTOR_PRECISION, 2.0 ** -40])
@pytest.mark.parametrize("mode", ["accurate", "fast"])
def test_precision_estimate_bounds_the_measured_error(rng, scheme, precision, mode):
    """The count chosen for ``u_f`` has error at most ``u_f (|A||B|)_ij`` in accurate
    mode, ``u_f ||a_i||_2 ||b_j||_2`` in fast mode (the factorisation's, FACTOR_MODE),
    on entries of an LU's trailing update (multipliers in [-1, 1], uniform entries),
    exact reference."""
    k = 256
    count = ol.moduli_for_precision(precision, scheme, k)
    A = rng.uniform(-1, 1, (24, k))
    B = rng.uniform(-0.5, 0.5, (k, 24))
    C = ozaki.gemm(A, B, scheme=scheme, num_moduli=count, mode=mode)
    exact = np.array([[math.fsum(A[i] * B[:, j]) for j in range(24)] for i in range(24)])
    if mode == "accurate":
        scale = np.abs(A) @ np.abs(B)
    else:
        scale = np.outer(np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=0))
    err = np.max(np.abs(C - exact) / scale)
    assert err <= ol.precision_of_moduli(scheme, count, k) <= max(precision, U)


def test_factorisation_runs_fast_mode_on_the_resolved_scheme(rng):
    """The reduced factorisation's products are uncertified by design: fast mode (no
    floor GEMM), on the scheme the residuals resolved (not the machine's choice for
    fast mode); the residual products keep the caller's mode."""
    from ozaki.linalg.refine import FACTOR_MODE
    A = hpl_matrix(rng, 300)
    for mode in ("accurate", "fast"):
        _, info = ol.solve_refined(A, np.ones(300), block_size=64, mode=mode, return_info=True)
        opts = info.factor_info.options
        assert FACTOR_MODE == "fast" and opts["mode"] == "fast"
        assert opts["scheme"] == info.scheme and opts["num_moduli"] == info.factor_num_moduli
    _, info = ol.solve_refined(A, np.ones(300), block_size=64, return_info=True)
    assert info.scheme == ozaki.resolve_options().scheme and info.converged  # the machine's
    with ozaki.set_scheme("fp64"):
        _, info = ol.solve_refined(A, np.ones(300), block_size=64, return_info=True)
    assert info.scheme == "fp64" and info.factor_info.options["scheme"] == "fp64"


# --- convergence ------------------------------------------------------------------------

@pytest.mark.parametrize("n, nrhs, nb", [(1, 1, 16), (37, 1, 16), (260, 3, 128)])
def test_hpl_matrices_converge_at_reduced_count(rng, n, nrhs, nb):
    A = hpl_matrix(rng, n)
    b = rng.uniform(-0.5, 0.5, (n, nrhs)) if nrhs > 1 else rng.uniform(-0.5, 0.5, n)
    x, info = ol.solve_refined(A, b, block_size=nb, return_info=True)
    assert x.shape == b.shape and x.dtype == np.float64
    check_solution(A, x, b, info)
    assert not info.fell_back and info.iterations <= 3
    assert info.factor_info.options["num_moduli"] == info.factor_num_moduli
    if n > 1:
        assert info.factor_num_moduli < info.full_num_moduli
        assert info.factor_info.emulated_products > 0
        assert info.factor_num_moduli < info.residual_num_moduli <= \
            ozaki.auto_num_moduli(info.scheme, n)
    assert info.tol == DEFAULT_TOL and info.factor_precision == DEFAULT_FACTOR_PRECISION
    assert set(info.seconds) == {"factor", "residual", "correction", "gmres", "other"}
    assert info.total_seconds >= math.fsum(info.seconds.values()) * (1 - 1e-9)


@pytest.mark.parametrize("kappa", [1e8, 1e10, 1e12])
def test_ill_conditioned_matrices_converge_by_default(rng, kappa):
    A = randsvd(rng, 150, kappa, mode=3)
    b = rng.standard_normal(150)
    x, info = ol.solve_refined(A, b, return_info=True, scheme="int8")
    check_solution(A, x, b, info)
    assert not info.fell_back and info.factor_num_moduli < info.full_num_moduli


@pytest.mark.parametrize("kappa", [1e8, 1e12])
@pytest.mark.parametrize("scheme, u_f", [("fp64", 2.0 ** -10), ("int8", 2.0 ** -12)])
def test_gmres_converges_where_classical_refinement_stalls(rng, kappa, scheme, u_f):
    """``kappa u_f >> 1``: classical steps stall (and fall back to the full count);
    ``auto`` turns to GMRES-IR, which converges on the reduced factors."""
    A = randsvd(rng, 120, kappa, mode=2)
    b = rng.standard_normal(120)
    opts = dict(scheme=scheme, factor_precision=u_f, block_size=32, return_info=True)
    with pytest.warns(LinAlgWarning, match="full count"):
        x, info = ol.solve_refined(A, b, method="classical", **opts)
    assert info.fell_back and info.fallback_info is not None
    check_solution(A, x, b, info)
    for method in ("auto", "gmres"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x, info = ol.solve_refined(A, b, method=method, **opts)
        assert not info.fell_back and "gmres" in info.steps and info.gmres_iterations >= 1
        assert info.steps[0] == ("classical" if method == "auto" else "gmres")
        assert 2 * info.factor_num_moduli <= info.full_num_moduli
        check_solution(A, x, b, info)


@pytest.mark.parametrize("max_iter, method", [(0, "auto"), (1, "classical")])
def test_fallback_when_forced_is_taken_and_correct(rng, max_iter, method):
    A = randsvd(rng, 100, 1e10, mode=3)
    b = rng.standard_normal((100, 2))
    with pytest.warns(LinAlgWarning, match="full count"):
        x, info = ol.solve_refined(A, b, factor_precision=2.0 ** -10, max_iter=max_iter,
                                   method=method, block_size=32, return_info=True)
    assert info.fell_back and info.iterations == max_iter
    assert "num_moduli" not in info.fallback_info.options  # the FP64-grade count
    assert info.seconds["factor"] > 0
    check_solution(A, x, b, info)


@given(st.integers(1, 30), st.integers(0, 2 ** 32 - 1), st.sampled_from(["auto", "gmres"]))
@settings(max_examples=20)
def test_random_systems_reach_tol(n, seed, method):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) + n * np.eye(n) * rng.integers(0, 2)
    b = rng.standard_normal(n) * 2.0 ** rng.integers(-40, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LinAlgWarning)  # a rare near-singular draw falls back
        x, info = ol.solve_refined(A, b, method=method, block_size=8, return_info=True)
    check_solution(A, x, b, info)


# --- the componentwise criterion --------------------------------------------------------

def scaled_hpl(rng, n, where):
    """HPL's matrix with its rows or columns scaled by ``2**e``, ``e`` in [-300, 300] (both
    ends drawn): exact (powers of two). ``b = A x0``, ``x0`` uniform, for ``"cols"``
    divided by the scales (every term ``a_ij x0_j`` is then the unscaled one times
    the row's scale); ``b`` is data only, numpy's product will do."""
    A0 = hpl_matrix(rng, n)
    e = rng.permutation(np.r_[-300, 300, rng.integers(-300, 301, n - 2)])
    x0 = rng.uniform(-0.5, 0.5, n)
    if where == "rows":
        A = np.ldexp(A0, e[:, None])
    else:
        A, x0 = np.ldexp(A0, e[None, :]), np.ldexp(x0, -e)
    return A, A @ x0


def forward_error(A, x, b):
    """``max_i |x_i - x*_i| / |x*_i|`` to first order: ``x* - x = A^-1 r``, ``r`` exact
    (fractions) rounded once, solved by scipy (whose relative error, about 1e-11 on these
    matrices, changes this estimate by as much relatively)."""
    r = [float(Fraction(bi) - sum(Fraction(a) * Fraction(xi) for a, xi in zip(row, x.tolist())))
         for row, bi in zip(A.tolist(), b.tolist())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LinAlgWarning)  # rcond ~ 1e-184: the scaling's
        d = scipy.linalg.solve(A, r)
    return float(np.max(np.abs(d) / np.abs(x)))


@pytest.mark.parametrize("where", ["rows", "cols"])
def test_badly_scaled_hpl_matrices_meet_tol_componentwise(rng, where):
    """Rows or columns scaled by ``2**+-300``: the first solve's normwise backward error
    is already below ``tol`` (the largest rows dominate it) while the componentwise one
    is far above; refinement goes on until every row's is below ``tol``, measured
    exactly, and the forward error is scipy's or better. The reduced-count LU of a
    row-scaled matrix is too poor to refine (its trailing updates mix rows ``2**600``
    apart in one product), so that case falls back to the full count."""
    A, b = scaled_hpl(rng, 32, where)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x, info = ol.solve_refined(A, b, block_size=8, return_info=True)
    assert ["full count" in str(w.message) for w in caught] == info.fell_back * [True]
    assert info.fell_back == (where == "rows") and info.iterations >= 1
    assert info.backward_errors[0] <= info.tol < info.componentwise_backward_errors[0]
    check_solution(A, x, b, info)
    omega, u = exact_componentwise_backward_error(A, x, b), Fraction(U)
    assert omega <= Fraction(info.tol)
    gamma = len(b) * u / (1 - len(b) * u)  # the sum |A||x| of n non-negative terms
    assert omega <= Fraction(info.componentwise_backward_error) * (1 + 6 * u + gamma) + 2 * u
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LinAlgWarning)
        x_scipy = scipy.linalg.solve(A, b)
    assert forward_error(A, x, b) <= 4 * max(forward_error(A, x_scipy, b), U)


def test_zero_denominator_rows_count_zero():
    """``(|A||x| + |b|)_i = 0`` (``b_1 = 0``, so ``x_1 = 0``): that row's residual is
    exactly 0 and, ``s`` being in the denominator, its ``omega`` is 0 (LAPACK's dgerfs,
    adding ``SAFE1`` to numerator and denominator, would report 1 and refine again)."""
    A, b = np.diag([2.0, 3.0, 4.0]), np.array([1.0, 0.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, info = ol.solve_refined(A, b, return_info=True)
    assert np.array_equal(x, [0.5, 0.0, 0.5]) and info.steps == []
    assert info.componentwise_backward_errors == [0.0] and info.converged


def test_underflow_needs_the_safe_minimum():
    """Row 1's terms are subnormal (about ``2**-1040``): its residual is computed on the
    subnormal grid (absolute error up to ``2**-1075``), 0 here, while the exact
    ``|r_1| / (|A||x| + |b|)_1`` is about ``2e-11``. With ``s = (n + 1) 2**-1022`` in the
    denominator, the exact backward error that ``omega`` estimates is within the
    claimed ``omega + 2u`` (and below ``tol``); without ``s`` no bound could hold."""
    A = np.array([[1.0, 0.0], [2.0 ** -1040, 3 * 2.0 ** -1040]])
    b = np.array([1 / 3, 2.0 ** -1041])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, info = ol.solve_refined(A, b, return_info=True)
    assert info.converged and info.componentwise_backward_error <= info.tol
    s = Fraction(3 * SAFE_MIN)
    terms = [[Fraction(a) * Fraction(xi) for a, xi in zip(row, x.tolist())] for row in A.tolist()]
    r = [abs(Fraction(bi) - sum(t)) for t, bi in zip(terms, b.tolist())]
    den = [sum(map(abs, t)) + abs(Fraction(bi)) for t, bi in zip(terms, b.tolist())]
    assert r[1] / den[1] > 1000 * Fraction(info.tol)  # the plain ratio: not estimable
    with_s = max(ri / (di + s) for ri, di in zip(r, den))
    assert with_s <= Fraction(info.componentwise_backward_error) + 2 * Fraction(U)
    assert with_s <= Fraction(info.tol)


def test_gmres_ir_solves_the_correction_equation_to_u(rng):
    """:func:`gmres_ir` with exact "factors" of a nearby matrix: the correction ``d``
    leaves ``||z - M d||_2 <= u ||z||_2`` (its recurrence's estimate) and so, ``M`` being
    near ``I``, a true residual ``r - A d`` of order ``u`` relative."""
    n = 40
    A = hpl_matrix(rng, n) + n * np.eye(n)
    P = np.linalg.inv(A + 1e-3 * hpl_matrix(rng, n))  # a preconditioner with error 1e-3
    r = rng.standard_normal(n)
    d, its = gmres_ir(lambda v: P @ v, lambda v: A @ v, r, n, {})
    assert 1 <= its <= n
    assert np.linalg.norm(r - A @ d) <= 64 * U * np.linalg.norm(A, 2) * np.linalg.norm(d)


def test_tolerance_is_met_or_warned(rng):
    A = hpl_matrix(rng, 60)
    b = rng.standard_normal(60)
    opts = dict(factor_precision=2.0 ** -10, block_size=16, return_info=True)
    x, loose = ol.solve_refined(A, b, tol=2.0 ** -30, **opts)
    _, tight = ol.solve_refined(A, b, **opts)
    assert loose.converged
    assert loose.componentwise_backward_error <= 2.0 ** -30 < \
        loose.componentwise_backward_errors[0]
    assert loose.iterations < tight.iterations
    with pytest.warns(LinAlgWarning) as caught:
        _, info = ol.solve_refined(A, b, tol=1e-300, **opts)
    messages = [str(w.message) for w in caught]
    assert any("full count" in m for m in messages) and any("above tol" in m for m in messages)
    assert not info.converged and info.fell_back and info.componentwise_backward_error > 1e-300


# --- bits ------------------------------------------------------------------------------

def _bits(*arrays):
    return [np.ascontiguousarray(a).tobytes() for a in arrays]


def test_bits_independent_of_threads(rng):
    A = randsvd(rng, 130, 1e10, mode=2)
    b = rng.standard_normal((130, 2))

    def run():
        x1, i1 = ol.solve_refined(A, b, scheme="int8", factor_precision=2.0 ** -12,
                                  method="auto", block_size=32, return_info=True)
        x2 = ol.solve_refined(A, b, block_size=32)
        assert "gmres" in i1.steps
        return _bits(x1, x2) + [repr(i1.backward_errors),
                                repr(i1.componentwise_backward_errors)]

    default = run()
    with ozaki.set_workers(1), threadpool_limits(1):
        single = run()
    assert default == single


@pytest.mark.parametrize("mode", ["accurate", "fast"])
def test_bits_independent_of_engine(rng, mode):
    A = randsvd(rng, 90, 1e9, mode=2)
    b = rng.standard_normal(90)
    got = {}
    for engine in ("cpu-blas", "cpu-int8"):
        x, info = ol.solve_refined(A, b, scheme="int8", mode=mode, engine=engine,
                                   factor_precision=2.0 ** -12, block_size=32,
                                   return_info=True)
        assert "gmres" in info.steps and info.converged
        got[engine] = _bits(x) + [repr(info.backward_errors),
                                  repr(info.componentwise_backward_errors)]
    assert got["cpu-blas"] == got["cpu-int8"]


# --- arguments -------------------------------------------------------------------------

def test_inputs_never_modified(rng):
    A = hpl_matrix(rng, 40)
    b = rng.standard_normal((40, 2))
    A0, b0 = A.copy(), b.copy()
    x = ol.solve_refined(A, b, overwrite_a=True, overwrite_b=True)
    assert np.array_equal(A, A0) and np.array_equal(b, b0)
    assert x is not b and not np.shares_memory(x, b)


def test_dtypes_and_shapes(rng):
    A = hpl_matrix(rng, 20)
    b = rng.standard_normal(20)
    x32 = ol.solve_refined(A.astype(np.float32), b.astype(np.float32))
    assert x32.dtype == np.float32
    xi = ol.solve_refined(np.eye(3, dtype=int) * 2, np.arange(3))
    assert xi.dtype == np.float64 and np.array_equal(xi, [0.0, 0.5, 1.0])
    x = ol.solve_refined(A, b[:, None])
    assert x.shape == (20, 1)
    x0, info = ol.solve_refined(np.zeros((0, 0)), np.zeros(0), return_info=True)
    assert x0.shape == (0,) and info.converged
    assert np.array_equal(ol.solve_refined(A, np.zeros(20)), np.zeros(20))


def test_complex_systems_when_lu_supports_them(rng):
    try:
        ol.lu_factor(np.eye(2, dtype=complex))
    except NotImplementedError:
        pytest.skip("ozaki.linalg's LU is real only in this version")
    A = rng.standard_normal((50, 50)) + 1j * rng.standard_normal((50, 50))
    b = rng.standard_normal(50) + 1j * rng.standard_normal(50)
    x, info = ol.solve_refined(A, b, method="gmres", factor_precision=2.0 ** -12,
                               return_info=True)
    assert x.dtype == np.complex128 and info.converged
    r = b - A @ x  # a check only: numpy's BLAS gives no result bit here
    assert np.max(np.abs(r)) <= 1e3 * U * np.abs(A).sum(1).max() * np.abs(x).max()


def test_singular_matrix_raises(rng):
    A = hpl_matrix(rng, 10)
    A[:, 3] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        ol.solve_refined(A, np.ones(10))


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(tol=0.0), ValueError, "tol"),
    (dict(tol=1.0), ValueError, "tol"),
    (dict(tol=float("nan")), ValueError, "tol"),
    (dict(tol="small"), TypeError, "tol"),
    (dict(factor_precision=-1e-8), ValueError, "factor_precision"),
    (dict(factor_precision=True), TypeError, "factor_precision"),
    (dict(method="jacobi"), ValueError, "method"),
    (dict(max_iter=-1), ValueError, "max_iter"),
    (dict(max_iter=2.0), TypeError, "max_iter"),
    (dict(max_iter=True), TypeError, "max_iter"),
    (dict(num_moduli=8), TypeError, "factor_precision"),
    (dict(moduli=8), TypeError, "moduli"),
    (dict(scheme="fp7"), ValueError, "scheme"),
    (dict(block_size=0), ValueError, "block_size"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ol.solve_refined(np.eye(3), np.ones(3), **kwargs)


def test_bad_arrays():
    with pytest.raises(ValueError, match="square"):
        ol.solve_refined(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="incompatible"):
        ol.solve_refined(np.eye(3), np.ones(4))
    with pytest.raises(ValueError, match="infs or NaNs"):
        ol.solve_refined(np.eye(2), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="2-D"):
        ol.solve_refined(np.ones(3), np.ones(3))


def test_non_finite_input_without_check_gives_nan_not_a_hang(rng):
    A = hpl_matrix(rng, 50)
    b = np.ones((50, 2))
    b[2, 0] = np.inf
    with pytest.warns(LinAlgWarning) as caught:
        x, info = ol.solve_refined(A, b, check_finite=False, block_size=16, return_info=True)
    assert any("above tol" in str(w.message) for w in caught)
    assert np.isnan(x[:, 0]).any() and not info.converged and info.fell_back
    assert len(info.steps) <= 4  # each kind stalls at once on an infinite backward error
    check = ol.solve_refined(A, b[:, 1], block_size=16)
    assert np.array_equal(x[:, 1], check)  # the finite column is refined as on its own


def test_docstring_example():
    import doctest

    import ozaki.linalg.refine
    result = doctest.testmod(ozaki.linalg.refine, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("scheme", ["fp64", "int8"])
def test_zero_pivot_at_the_reduced_count_only_falls_back(scheme):
    from ozaki.linalg.refine import FACTOR_MODE
    """``a22`` is the reduced-count product ``l21 u12`` itself: the reduced LU's pivot
    ``a22 - fl_N(l21 u12)`` is exactly zero, the full-count one is not."""
    l21, u12 = 1 - 2.0 ** -30, 1 - 2.0 ** -29
    count = ol.moduli_for_precision(2.0 ** -10, scheme, 1)
    reduced = ozaki.gemm([[l21]], [[u12]], scheme=scheme, num_moduli=count,
                         mode=FACTOR_MODE)[0, 0]
    assert reduced != ozaki.gemm([[l21]], [[u12]], scheme=scheme)[0, 0]
    A = np.array([[1.0, u12], [l21, reduced]])
    b = np.array([1.0, 2.0])
    with pytest.warns(LinAlgWarning, match="zero pivot"):
        x, info = ol.solve_refined(A, b, scheme=scheme, factor_precision=2.0 ** -10,
                                   block_size=1, return_info=True)
    assert info.fell_back and info.iterations == 0
    assert info.backward_errors[0] == info.componentwise_backward_errors[0] == 1.0  # x = 0
    assert info.factor_num_moduli == count
    check_solution(A, x, b, info)


@pytest.mark.compensated
def test_residuals_in_row_blocks_change_no_bit(rng, monkeypatch):
    """Residual products cut into blocks of rows (each on the small-product path) give
    the bits of the uncut product on that path: the whole solve is bitwise the same."""
    from ozaki.core import compensated
    from ozaki.core.kind import REAL
    A, b = hpl_matrix(rng, 150), rng.uniform(-0.5, 0.5, (150, 2))
    whole, info = ol.solve_refined(A, b, block_size=32, return_info=True)
    assert info.residual_num_moduli == 0  # the small-product path, uncut
    monkeypatch.setattr(compensated, "SMALL_WORK", 150 * 2 * 7)  # blocks of 7 rows
    assert compensated.rows_per_product(2, 150, REAL) == 7
    with compensated.enabled(False):
        assert compensated.rows_per_product(2, 150, REAL) == 0
    cut, info_cut = ol.solve_refined(A, b, block_size=32, return_info=True)
    assert np.array_equal(cut, whole) and info_cut.steps == info.steps
    assert info_cut.componentwise_backward_errors == info.componentwise_backward_errors

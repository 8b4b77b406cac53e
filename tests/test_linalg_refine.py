"""ozaki.linalg.solve_refined: LU at a reduced count of moduli, refined to FP64 accuracy."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import LinAlgWarning
from threadpoolctl import threadpool_limits

import ozaki
from ozaki import linalg as ol
from ozaki.linalg.refine import DEFAULT_FACTOR_PRECISION, DEFAULT_TOL

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


def reference_backward_error(A, x, b):
    """Normwise backward error with each residual entry and ``||A||_inf`` by math.fsum
    (correctly rounded sums of the exact products' roundings: independent of ozaki)."""
    x2, b2 = x.reshape(len(b), -1), b.reshape(len(b), -1)
    worst = 0.0
    a_norm = max(math.fsum(abs(v) for v in row) for row in A.tolist())
    for j in range(x2.shape[1]):
        r = max(abs(math.fsum([*(a * xi for a, xi in zip(row, x2[:, j].tolist())), -bi]))
                for row, bi in zip(A.tolist(), b2[:, j].tolist()))
        worst = max(worst, r / (a_norm * np.max(np.abs(x2[:, j])) + np.max(np.abs(b2[:, j]))))
    return worst


def check_solution(A, x, b, info):
    """``info``'s backward error meets ``tol``, and the true one is within the residual
    product's contract of it: ``|r_computed - r| <= u|r| + 2u |A||x|`` entrywise, so the
    true backward error exceeds the computed one by at most about ``3u``."""
    assert info.converged and info.backward_error <= info.tol
    assert len(info.backward_errors) == len(info.steps) + 1
    assert info.backward_error <= info.backward_errors[-1]  # each column keeps its best
    assert reference_backward_error(A, x, b) <= info.backward_error + 3.01 * U


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
def test_precision_estimate_bounds_the_measured_error(rng, scheme, precision):
    """The count chosen for ``u_f`` has error at most ``u_f (|A||B|)_ij`` (entries of an
    LU's trailing update: multipliers in [-1, 1], uniform entries), exact reference."""
    k = 128
    count = ol.moduli_for_precision(precision, scheme, k)
    A = rng.uniform(-1, 1, (24, k))
    B = rng.uniform(-0.5, 0.5, (k, 24))
    C = ozaki.gemm(A, B, scheme=scheme, num_moduli=count)
    exact = np.array([[math.fsum(A[i] * B[:, j]) for j in range(24)] for i in range(24)])
    err = np.max(np.abs(C - exact) / (np.abs(A) @ np.abs(B)))
    assert err <= ol.precision_of_moduli(scheme, count, k) <= max(precision, U)


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


def test_tolerance_is_met_or_warned(rng):
    A = hpl_matrix(rng, 60)
    b = rng.standard_normal(60)
    opts = dict(factor_precision=2.0 ** -10, block_size=16, return_info=True)
    x, loose = ol.solve_refined(A, b, tol=2.0 ** -30, **opts)
    _, tight = ol.solve_refined(A, b, **opts)
    assert loose.converged and loose.backward_error <= 2.0 ** -30 < loose.backward_errors[0]
    assert loose.iterations < tight.iterations
    with pytest.warns(LinAlgWarning) as caught:
        _, info = ol.solve_refined(A, b, tol=1e-300, **opts)
    messages = [str(w.message) for w in caught]
    assert any("full count" in m for m in messages) and any("above tol" in m for m in messages)
    assert not info.converged and info.fell_back and info.backward_error > 1e-300


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
        return _bits(x1, x2) + [repr(i1.backward_errors)]

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
        got[engine] = _bits(x) + [repr(info.backward_errors)]
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
    """``a22`` is the reduced-count product ``l21 u12`` itself: the reduced LU's pivot
    ``a22 - fl_N(l21 u12)`` is exactly zero, the full-count one is not."""
    l21, u12 = 1 - 2.0 ** -30, 1 - 2.0 ** -29
    count = ol.moduli_for_precision(2.0 ** -10, scheme, 1)
    reduced = ozaki.gemm([[l21]], [[u12]], scheme=scheme, num_moduli=count)[0, 0]
    assert reduced != ozaki.gemm([[l21]], [[u12]], scheme=scheme)[0, 0]
    A = np.array([[1.0, u12], [l21, reduced]])
    b = np.array([1.0, 2.0])
    with pytest.warns(LinAlgWarning, match="zero pivot"):
        x, info = ol.solve_refined(A, b, scheme=scheme, factor_precision=2.0 ** -10,
                                   block_size=1, return_info=True)
    assert info.fell_back and info.iterations == 0 and info.backward_errors[0] == 1.0
    assert info.factor_num_moduli == count
    check_solution(A, x, b, info)

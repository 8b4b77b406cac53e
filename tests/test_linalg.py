"""ozaki.linalg: scipy.linalg's dense factorisations and solvers on emulated products."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.linalg as sl
from threadpoolctl import threadpool_limits

import ozaki
import ozaki.linalg
import ozaki.backends.cpu.parallel
from ozaki import linalg as ol

U = 2.0 ** -53


def random(rng, m, n=None):
    return rng.standard_normal((m, m if n is None else n))


def spd(rng, n):
    G = rng.standard_normal((n, n))
    return G @ G.T + n * np.eye(n)


def hpl_residual(A, x, b):
    """HPL's scaled residual ||Ax - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n)."""
    n = A.shape[0]
    r = np.abs(A @ x - b).max()
    eps = np.finfo(float).eps
    return r / (eps * (np.abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()) * n)


def lu_backward_error(A, lu_, piv):
    """||P^T A - L U||_inf / ||A||_inf, in units of n u."""
    m, n = A.shape
    K = min(m, n)
    PA = A.copy()
    for i, p in enumerate(piv):
        PA[[i, p]] = PA[[p, i]]
    L = np.tril(lu_[:, :K], -1) + np.eye(m, K)
    R = PA - L @ np.triu(lu_[:K])
    return np.abs(R).sum(axis=1).max() / (np.abs(A).sum(axis=1).max() * max(m, n) * U)


def wilkinson(n):
    """Wilkinson's growth matrix: every pivot is in place, U's last column grows as 2^k."""
    W = np.eye(n) - np.tril(np.ones((n, n)), -1)
    W[:, -1] = 1.0
    return W


# --- imports ---------------------------------------------------------------------------

@pytest.mark.slow
def test_both_import_styles_and_no_import_from_ozaki():
    assert ozaki.linalg is ol
    assert set(ol.__all__) >= {"lu_factor", "lu_solve", "lu", "cho_factor", "cho_solve",
                               "cholesky", "solve_triangular", "solve", "inv", "det"}
    code = ("import sys, ozaki; assert 'ozaki.linalg' not in sys.modules; "
            "from ozaki import linalg; import ozaki.linalg as L2; assert linalg is L2; "
            "print(linalg.det([[2.0]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2.0"


# --- LU against scipy ------------------------------------------------------------------

@pytest.mark.parametrize("n, nb", [(1, 128), (5, 4), (37, 8), (100, 128), (130, 32),
                                   (64, 16)])
def test_lu_factor_matches_scipy(rng, n, nb):
    A = random(rng, n)
    lu_, piv = ol.lu_factor(A, block_size=nb)
    lu2, piv2 = sl.lu_factor(A)
    assert piv.dtype == piv2.dtype == np.int32
    np.testing.assert_array_equal(piv, piv2)
    assert lu_.shape == A.shape and lu_.dtype == np.float64
    assert lu_backward_error(A, lu_, piv) <= 2.0
    np.testing.assert_allclose(lu_, lu2, rtol=0, atol=1e-11 * np.abs(lu2).max())


def test_lu_factor_empty():
    lu_, piv = ol.lu_factor(np.zeros((0, 0)))
    assert lu_.shape == (0, 0) and piv.shape == (0,) and piv.dtype == np.int32
    assert ol.det(np.zeros((0, 0))) == sl.det(np.zeros((0, 0))) == 1.0
    assert ol.inv(np.zeros((0, 0))).shape == (0, 0)
    assert ol.solve(np.zeros((0, 0)), np.zeros(0)).shape == (0,)


@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (90, 40), (40, 90)])
def test_lu_rectangular_matches_scipy(rng, shape):
    A = random(rng, *shape)
    lu_, piv = ol.lu_factor(A, block_size=16)
    lu2, piv2 = sl.lu_factor(A)
    np.testing.assert_array_equal(piv, piv2)
    assert lu_backward_error(A, lu_, piv) <= 2.0
    for kw in ({}, {"permute_l": True}, {"p_indices": True}):
        got, want = ol.lu(A, block_size=16, **kw), sl.lu(A, **kw)
        assert len(got) == len(want)
        for x, y in zip(got, want):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * max(1, np.abs(y).max()))
    P, L, Uf = ol.lu(A, block_size=16)
    np.testing.assert_allclose(P @ L @ Uf, A, atol=1e-13 * np.abs(A).max())
    p, L, Uf = ol.lu(A, block_size=16, p_indices=True)
    np.testing.assert_allclose(L[p] @ Uf, A, atol=1e-13 * np.abs(A).max())


def test_structured_matrices(rng):
    n = 40
    # Wilkinson's growth matrix: no interchange, exact factors (entries +-1 and 2^k)
    W = wilkinson(n)
    lu_, piv = ol.lu_factor(W, block_size=16)
    lu2, piv2 = sl.lu_factor(W)
    np.testing.assert_array_equal(piv, np.arange(n))
    np.testing.assert_array_equal(lu_, lu2)
    assert lu_[-1, -1] == 2.0 ** (n - 1)
    # a permuted diagonally dominant matrix: pivoting must undo the permutation
    D = random(rng, n) + 4 * n * np.eye(n)
    perm = rng.permutation(n)
    lu_, piv = ol.lu_factor(D[perm], block_size=16)
    np.testing.assert_array_equal(piv, sl.lu_factor(D[perm])[1])
    assert lu_backward_error(D[perm], lu_, piv) <= 2.0
    # graded columns (scales 2^-20 .. 2^20) and a zero leading entry
    G = random(rng, n) * 2.0 ** np.linspace(-20, 20, n)
    G[0, 0] = 0.0
    lu_, piv = ol.lu_factor(G, block_size=8)
    np.testing.assert_array_equal(piv, sl.lu_factor(G)[1])
    assert lu_backward_error(G, lu_, piv) <= 2.0


@pytest.mark.parametrize("n, nb", [(1, 8), (50, 128), (150, 32)])
def test_solves_hpl_residual(rng, n, nb):
    A = random(rng, n)
    b = rng.standard_normal(n)
    B = rng.standard_normal((n, 3))
    x = ol.solve(A, b, block_size=nb)
    assert x.shape == (n,)
    assert hpl_residual(A, x, b) < 16
    assert hpl_residual(A.T, ol.solve(A, B, transposed=True, block_size=nb), B) < 16
    lu_piv = ol.lu_factor(A, block_size=nb)
    for trans in (0, 1, 2, "N", "T"):
        X = ol.lu_solve(lu_piv, B, trans=trans, block_size=nb)
        At = A if trans in (0, "N") else A.T
        assert hpl_residual(At, X, B) < 16
        t = {"N": 0, "T": 1}.get(trans, trans)   # scipy's lu_solve takes ints only
        np.testing.assert_allclose(X, sl.lu_solve(sl.lu_factor(A), B, trans=t),
                                   rtol=1e-9, atol=1e-9)
    Ainv = ol.inv(A, block_size=nb)
    assert hpl_residual(A, Ainv, np.eye(n)) < 16
    np.testing.assert_allclose(ol.det(A, block_size=nb), sl.det(A), rtol=1e-11)


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1, "C"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_scipy(rng, lower, trans, unit):
    n = 70
    T = random(rng, n) + 3 * np.sqrt(n) * np.eye(n)   # the other triangle is garbage
    B = rng.standard_normal((n, 4))
    x = ol.solve_triangular(T, B, trans=trans, lower=lower, unit_diagonal=unit,
                            block_size=16)
    y = sl.solve_triangular(T, B, trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12 * np.abs(y).max())
    Tt = np.tril(T) if lower else np.triu(T)
    if unit:
        np.fill_diagonal(Tt, 1.0)
    assert hpl_residual(Tt if trans == 0 else Tt.T, x, B) < 16
    assert ol.solve_triangular(T, B[:, 0], trans=trans, lower=lower, unit_diagonal=unit,
                               block_size=16).shape == (n,)


# --- Cholesky --------------------------------------------------------------------------

@pytest.mark.parametrize("n, nb", [(1, 8), (33, 8), (90, 128), (100, 32)])
@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_matches_scipy(rng, n, nb, lower):
    A = spd(rng, n)
    C = ol.cholesky(A, lower=lower, block_size=nb)
    C2 = sl.cholesky(A, lower=lower)
    np.testing.assert_allclose(C, C2, rtol=0, atol=1e-13 * np.abs(C2).max())
    assert np.all((np.triu(C, 1) if lower else np.tril(C, -1)) == 0)
    R = C @ C.T - A if lower else C.T @ C - A
    assert np.abs(R).max() <= 4 * n * U * np.abs(A).max()
    c, low = ol.cho_factor(A, lower=lower, block_size=nb)
    assert low is lower
    tri = np.tril if lower else np.triu
    np.testing.assert_array_equal(tri(c), C)
    other = np.triu(np.ones((n, n), bool), 1)
    other = other if lower else other.T
    np.testing.assert_array_equal(c[other], A[other])     # untouched, as LAPACK's potrf
    b = rng.standard_normal((n, 2))
    x = ol.cho_solve((c, low), b, block_size=nb)
    assert hpl_residual(A, x, b) < 16
    assert hpl_residual(A, ol.solve(A, b, assume_a="pos", lower=lower, block_size=nb), b) < 16


def test_cholesky_reads_one_triangle(rng):
    A = spd(rng, 50)
    junk = A + np.triu(rng.standard_normal((50, 50)), 1)    # upper triangle wrong
    np.testing.assert_array_equal(ol.cholesky(junk, lower=True, block_size=16),
                                  ol.cholesky(A, lower=True, block_size=16))


@pytest.mark.parametrize("A", [np.array([[1.0, 2.0], [2.0, 1.0]]), -np.eye(3),
                               np.diag([1.0, 1.0, 0.0, 1.0])])
def test_not_positive_definite_as_scipy(A):
    with pytest.raises(np.linalg.LinAlgError) as want:
        sl.cholesky(A)
    with pytest.raises(np.linalg.LinAlgError) as got:
        ol.cholesky(A, block_size=2)
    assert str(got.value) == str(want.value)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        ol.cho_factor(A, lower=True)
    with pytest.raises(np.linalg.LinAlgError):
        ol.solve(A, np.ones(A.shape[0]), assume_a="pos")


# --- determinism -----------------------------------------------------------------------

def _bits(*arrays):
    return [np.ascontiguousarray(a).tobytes() for a in arrays]


@pytest.mark.parametrize("options", [{}, {"scheme": "int8", "mode": "fast"}])
def test_bits_independent_of_threads(rng, options):
    A = random(rng, 150)
    S = spd(rng, 150)
    b = rng.standard_normal((150, 2))

    def run():
        lu_, piv, info = ol.lu_factor(A, block_size=32, return_info=True, **options)
        assert info.emulated_products > 0
        x = ol.lu_solve((lu_, piv), b, block_size=32, **options)
        c = ol.cholesky(S, block_size=32, **options)
        return _bits(lu_, piv, x, c)

    default = run()
    with ozaki.backends.cpu.parallel.limit(1), threadpool_limits(1):
        single = run()
    assert default == single


@pytest.mark.compensated
def test_bits_independent_of_threads_small_product_path(rng):
    A = random(rng, 200)
    b = rng.standard_normal(200)
    lu_, piv, info = ol.lu_factor(A, block_size=64, return_info=True)
    assert info.compensated_products > 0 and info.emulated_products == 0
    x = ol.lu_solve((lu_, piv), b, block_size=64)
    with ozaki.backends.cpu.parallel.limit(1), threadpool_limits(1):
        lu1, piv1 = ol.lu_factor(A, block_size=64)
        x1 = ol.lu_solve((lu1, piv1), b, block_size=64)
    assert _bits(lu_, piv, x) == _bits(lu1, piv1, x1)
    assert hpl_residual(A, x, b) < 16


@pytest.mark.parametrize("mode", ["accurate", "fast"])
def test_bits_independent_of_engine(rng, mode):
    A = random(rng, 96)
    S = spd(rng, 96)
    b = rng.standard_normal(96)
    got = {}
    for engine in ("auto", "cpu-int8"):
        opts = dict(scheme="int8", mode=mode, engine=engine, block_size=32)
        lu_, piv, info = ol.lu_factor(A, return_info=True, **opts)
        assert info.emulated_products > 0
        got[engine] = _bits(lu_, piv, ol.lu_solve((lu_, piv), b, **opts),
                            ol.cholesky(S, **opts))
    assert got["auto"] == got["cpu-int8"]


def test_block_size_changes_bits_not_accuracy(rng):
    A = random(rng, 100)
    b = rng.standard_normal(100)
    for nb in (1, 7, 16, 100, 1000):
        lu_, piv = ol.lu_factor(A, block_size=nb)
        np.testing.assert_array_equal(piv, sl.lu_factor(A)[1])
        assert lu_backward_error(A, lu_, piv) <= 2.0
        assert hpl_residual(A, ol.lu_solve((lu_, piv), b, block_size=nb), b) < 16


# --- scipy's conventions and errors -----------------------------------------------------

def test_singular_matrix_as_scipy():
    S = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 2 is exactly zero"):
        lu_, piv = ol.lu_factor(S)
    with pytest.warns(sl.LinAlgWarning):
        lu2, piv2 = sl.lu_factor(S)
    np.testing.assert_array_equal(lu_, lu2)
    np.testing.assert_array_equal(piv, piv2)
    Z = np.arange(36.0).reshape(6, 6) % 5
    Z[:, 2] = 0.0
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ol.lu_factor(Z, block_size=2)
        sl.lu_factor(Z)
    assert len(w) == 2 and str(w[0].message) == str(w[1].message)
    assert w[0].category is sl.LinAlgWarning
    for f in (lambda: ol.solve(S, [1.0, 1.0]), lambda: ol.inv(S)):
        with pytest.raises(np.linalg.LinAlgError, match="singular"):
            f()
    assert ol.det(S) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ol.lu(S)                                          # no warning, as scipy
    with pytest.raises(np.linalg.LinAlgError,
                       match="singular matrix: resolution failed at diagonal 1"):
        ol.solve_triangular(np.diag([1.0, 0.0, 1.0]), np.ones(3))
    ol.solve_triangular(np.diag([1.0, 0.0, 1.0]), np.ones(3), unit_diagonal=True)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_check_finite(bad):
    A = np.eye(3)
    A[1, 2] = bad
    for f in (ol.lu_factor, ol.lu, ol.cholesky, ol.cho_factor, ol.inv, ol.det):
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(A)
    for f in (ol.solve, ol.solve_triangular):
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(A, np.ones(3))
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(np.eye(3), np.array([1.0, bad, 1.0]))
    with pytest.raises(ValueError, match="infs or NaNs"):
        ol.lu_solve(ol.lu_factor(np.eye(3)), np.array([1.0, bad, 1.0]))
    lu_, piv = ol.lu_factor(A, check_finite=False)       # no check: values propagate
    assert not np.isfinite(lu_).all()


def test_non_square_and_shape_errors():
    R = np.ones((2, 3))
    for f in (ol.cholesky, ol.cho_factor, ol.inv, ol.det):
        with pytest.raises(ValueError, match="square"):
            f(R)
    for f in (ol.solve, ol.solve_triangular):
        with pytest.raises(ValueError, match="square"):
            f(R, np.ones(2))
        with pytest.raises(ValueError, match="incompatible"):
            f(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        ol.lu_factor(np.ones(3))
    with pytest.raises(ValueError, match="trans"):
        ol.lu_solve(ol.lu_factor(np.eye(2)), np.ones(2), trans=3)
    with pytest.raises(ValueError, match="assume_a"):
        ol.solve(np.eye(2), np.ones(2), assume_a="banded")


@pytest.mark.parametrize("nb, exc", [(0, ValueError), (-4, ValueError), (2.5, TypeError),
                                     (True, TypeError), ("8", TypeError), (None, TypeError)])
def test_bad_block_size(nb, exc):
    for f, args in ((ol.lu_factor, ()), (ol.cholesky, ()), (ol.solve, (np.ones(2),)),
                    (ol.solve_triangular, (np.ones(2),)), (ol.inv, ()), (ol.det, ())):
        with pytest.raises(exc, match="block_size"):
            f(np.eye(2), *args, block_size=nb)
    assert ol.lu_factor(np.eye(2), block_size=np.int64(1))[0].shape == (2, 2)


def test_product_options_checked_up_front():
    with pytest.raises(TypeError, match="unexpected keyword argument 'shceme'"):
        ol.lu_factor(np.eye(2), shceme="int8")
    with pytest.raises(ValueError, match="scheme"):
        ol.lu_factor(np.eye(1), scheme="int4")           # no product runs: still checked
    with pytest.raises(ValueError, match="mode"):
        ol.cholesky(np.eye(1), mode="quick")
    with pytest.raises(ValueError, match="engine"):
        ol.solve(np.eye(1), np.ones(1), engine="gpu-nonexistent")


def test_unsupported_dtypes_named():
    # complex input is factored (tests/test_linalg_complex.py); long double and
    # non-numeric input are refused, naming the argument
    for bad, what in ((np.eye(2, dtype=np.longdouble), "long double"),
                      (np.eye(2, dtype=np.clongdouble), "long double"),
                      (np.array([["a", "b"], ["c", "d"]]), "numeric")):
        if bad.dtype in (np.float64, np.complex128):
            continue  # long double is double on this platform
        with pytest.raises(TypeError, match=f"^a .*{what}|a must be .*{what}"):
            ol.lu_factor(bad)
        with pytest.raises(TypeError, match=f"b .*{what}|b must be .*{what}"):
            ol.solve(np.eye(2), bad[:, 0])


def test_inputs_untouched_unless_overwrite(rng):
    A, S = random(rng, 40), spd(rng, 40)
    b = rng.standard_normal((40, 2))
    A0, S0, b0 = A.copy(), S.copy(), b.copy()
    ol.lu_factor(A, block_size=16)
    ol.lu(A, block_size=16)
    ol.solve(A, b, block_size=16)
    ol.inv(A, block_size=16)
    ol.det(A, block_size=16)
    ol.cholesky(S, block_size=16)
    c = ol.cho_factor(S, block_size=16)
    ol.cho_solve(c, b, block_size=16)
    ol.lu_solve(ol.lu_factor(A), b)
    ol.solve_triangular(A, b)
    np.testing.assert_array_equal(A, A0)
    np.testing.assert_array_equal(S, S0)
    np.testing.assert_array_equal(b, b0)
    # overwrite_a: a float64 ndarray is factored in place (C or Fortran order)
    for order in ("C", "F"):
        W = np.array(A0, order=order)
        lu_, piv = ol.lu_factor(W, overwrite_a=True, block_size=16)
        assert lu_ is W
        np.testing.assert_array_equal(lu_, ol.lu_factor(A0, block_size=16)[0])
    W = S0.copy()
    c, _ = ol.cho_factor(W, overwrite_a=True, block_size=16)
    assert c is W
    bb = b0.copy()
    x = ol.lu_solve(ol.lu_factor(A0), bb, overwrite_b=True)
    assert np.shares_memory(x, bb)
    # float32 input cannot hold the float64 work: left alone
    F = A0.astype(np.float32)
    F0 = F.copy()
    ol.lu_factor(F, overwrite_a=True)
    np.testing.assert_array_equal(F, F0)


def test_dtypes_as_scipy(rng):
    A = (random(rng, 6) + 6 * np.eye(6)).astype(np.float32)
    S = spd(rng, 6).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    cases = [
        (lambda m: m.lu_factor(A), None), (lambda m: m.lu(A), None),
        (lambda m: m.cholesky(S), None), (lambda m: m.cho_factor(S)[0], None),
        (lambda m: m.solve(A, b), None), (lambda m: m.inv(A), None),
        (lambda m: m.det(A), None), (lambda m: m.solve_triangular(A, b), None),
        (lambda m: m.lu_solve(m.lu_factor(A), b), None),
        (lambda m: m.cho_solve(m.cho_factor(S), b), None),
        (lambda m: m.solve(A, b.astype(np.float64)), None),
        (lambda m: m.lu_factor(np.arange(4).reshape(2, 2) + np.eye(2, dtype=int)), None),
        (lambda m: m.det(np.array([[2, 1], [1, 2]])), None),
    ]
    for f, _ in cases:
        got, want = f(ol), f(sl)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for x, y in zip(got, want):
            assert np.asarray(x).dtype == np.asarray(y).dtype, (x, y)
            assert type(x) is type(y)
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def test_return_info(rng):
    A = random(rng, 120)
    lu_, piv, info = ol.lu_factor(A, block_size=32, return_info=True)
    assert isinstance(info, ol.LinalgInfo) and info.routine == "lu_factor"
    assert set(info.seconds) == set(ol.PHASES)
    assert info.block_size == 32 and info.shape == (120, 120)
    assert info.products == 3 and info.emulated_products == 3   # one update per panel but the last
    assert info.seconds["panel"] > 0 and info.seconds["updates"] > 0
    assert 0 < info.emulated_share <= info.update_share <= 1
    assert abs(sum(info.seconds.values()) - info.total_seconds) < 1e-6
    x, info = ol.solve(A, np.ones(120), block_size=32, return_info=True, scheme="int8")
    assert info.options == {"scheme": "int8"} and info.products == 3 + 2 * 3
    d, info = ol.det(A, return_info=True)
    assert isinstance(d, np.float64) and info.routine == "det"


# --- the compiled kernels against the element-wise numpy formulation --------------------

from hypothesis import given  # noqa: E402  (this section's property tests)
from hypothesis import strategies as st  # noqa: E402

def _ref_lu_panel(W, k, w, piv):
    zero = -1
    end = k + w
    for j in range(k, end):
        p = j + int(np.argmax(np.abs(W[j:, j])))
        piv[j] = p
        if W[p, j] != 0:
            if p != j:
                W[[j, p], :] = W[[p, j], :]
            W[j + 1:, j] /= W[j, j]
        elif zero < 0:
            zero = j
        if j + 1 < end:
            W[j + 1:, j + 1:end] -= W[j + 1:, j, None] * W[j, None, j + 1:end]
    return zero


def _ref_cholesky_block(D):
    n = D.shape[0]
    for j in range(n):
        d = D[j, j]
        if not d > 0:
            return j
        D[j, j] = r = np.sqrt(d)
        if j + 1 < n:
            D[j + 1:, j] /= r
            D[j + 1:, j + 1:] -= D[j + 1:, j, None] * D[None, j + 1:, j]
    return -1


def _ref_lower_solve(L, B, unit):
    n = L.shape[0]
    for i in range(n):
        if not unit:
            B[i] /= L[i, i]
        if i + 1 < n:
            B[i + 1:] -= L[i + 1:, i, None] * B[i]


def _ref_upper_solve(U, B, unit):
    for i in range(U.shape[0] - 1, -1, -1):
        if not unit:
            B[i] /= U[i, i]
        if i > 0:
            B[:i] -= U[:i, i, None] * B[i]


def _same_bits(a, b):
    """Equal bit for bit (NaNs: equal positions; their payloads are not compared)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    na, nb_ = np.isnan(a), np.isnan(b)
    return (np.array_equal(na, nb_)
            and np.array_equal(a[~na].view(np.int64), b[~nb_].view(np.int64)))


def _panel_cases(rng):
    yield "random", rng.standard_normal((70, 90))
    yield "tall", rng.standard_normal((130, 40))
    yield "wilkinson", wilkinson(60)
    yield "graded", rng.standard_normal((50, 50)) * 10.0 ** np.linspace(-150, 150, 50)
    T = rng.integers(-2, 3, (64, 64)).astype(float)  # ties in |x|: the first index wins
    yield "ties", T
    Z = rng.standard_normal((48, 48))
    Z[:, 5] = 0.0
    Z[:, 20] = -0.0
    Z[:, 30] = Z[:, 2]
    yield "zero columns", Z
    N = rng.standard_normal((40, 40))
    N[7, 3] = np.nan
    N[9, 3] = np.inf
    N[20, 11] = -np.inf
    yield "nan and inf", N
    yield "subnormal", rng.standard_normal((33, 33)) * 2.0 ** -1060
    yield "tall, several row tiles", rng.standard_normal((600, 72))
    yield "wide, square panel", rng.standard_normal((24, 300))
    yield "zero pivot on the way", _zero_pivot_on_the_way(rng, 70, 9)


def _zero_pivot_on_the_way(rng, n, z):
    """``L0 U0`` with dyadic entries (the elimination is exact: no rounding), ``|L0| < 1``
    below its unit diagonal (no interchange) and ``U0``'s row ``z`` zero: column ``z``
    becomes exactly zero at step ``z`` (a skipped pivot) while the later ones do not."""
    L0 = np.tril(rng.integers(-3, 4, (n, n)) / 8.0, -1) + np.eye(n)
    U0 = np.triu(rng.integers(-4, 5, (n, n)).astype(float)) + 8 * np.eye(n)
    U0[z] = 0.0
    return L0 @ U0


@pytest.mark.parametrize("k, w", [(0, 1), (0, 17), (0, 33), (5, 16), (3, 40), (11, 29),
                                  (0, 72), (2, 50)])
def test_compiled_lu_panel_same_bits_as_numpy(rng, k, w):
    from ozaki.linalg import kernels
    for name, A in _panel_cases(rng):
        ww = min(w, min(A.shape) - k)
        W1, W2 = A.copy(), A.copy()
        p1 = np.arange(min(A.shape), dtype=np.int32)
        p2 = p1.copy()
        with np.errstate(all="ignore"):
            z1 = _ref_lu_panel(W1, k, ww, p1)
        z2 = kernels.lu_panel(W2, k, ww, p2)
        assert z1 == z2, name
        assert np.array_equal(p1, p2), name
        assert _same_bits(W1, W2), name
        if name == "zero pivot on the way" and k == 0 and ww > 9:
            assert z2 == 9


_NAN_PAYLOAD = np.array(0x7FF8000000000123, dtype=np.int64).view(float)[()]  # a larger NaN


@pytest.mark.parametrize("base, column, pivot", [
    (0.5, {0: -np.inf, 10: np.inf}, 0),            # a tie of infinities: the first wins
    (0.0, {3: -0.0, 30: 2.0 ** -1074}, 30),        # the smallest subnormal beats the zeros
    (0.0, {3: -0.0, 30: 0.0}, 0),                   # all zero (signed): skipped, no interchange
    (0.5, {0: np.nan, 4: np.inf}, 0),               # a NaN on the diagonal wins at once
    (0.5, {5: 1e300, 40: np.nan, 41: np.nan}, 40),  # the first NaN wins, below a huge entry
    (0.5, {7: -3.0, 9: 3.0, 12: -3.0}, 7),          # ties in magnitude: the first wins
    (0.5, {5: np.nan, 40: _NAN_PAYLOAD}, 5),        # the first NaN, whatever the payloads
])
def test_compiled_lu_panel_pivot_semantics(rng, base, column, pivot):
    from ozaki.linalg import kernels
    A = rng.standard_normal((45, 20))
    A[:, 0] = base
    for i, v in column.items():
        A[i, 0] = v
    W1, W2 = A.copy(), A.copy()
    p1, p2 = np.arange(20, dtype=np.int32), np.arange(20, dtype=np.int32)
    with np.errstate(all="ignore"):
        z1 = _ref_lu_panel(W1, 0, 20, p1)
    z2 = kernels.lu_panel(W2, 0, 20, p2)
    assert p2[0] == pivot
    assert z2 == z1 and np.array_equal(p1, p2) and _same_bits(W1, W2)
    assert (z2 == 0) == (not np.any(A[:, 0]))


def test_compiled_lu_panel_checks_its_panel():
    from ozaki.linalg import kernels, zkernels
    piv = np.arange(8, dtype=np.int32)
    for mod, dtype in ((kernels, float), (zkernels, complex)):
        W = np.ones((8, 5), dtype=dtype)
        with pytest.raises(ValueError, match="k=3, w=3 must satisfy"):
            mod.lu_panel(W, 3, 3, piv)  # past W's last column
        with pytest.raises(ValueError, match="k=-1"):
            mod.lu_panel(W, -1, 2, piv)
        with pytest.raises(ValueError, match="piv must be 1-D with at least k \\+ w = 5"):
            mod.lu_panel(W, 0, 5, piv[:4])
        with pytest.raises(ValueError, match="W must be a 2-D array"):
            mod.lu_panel(W[0], 0, 1, piv)
        W2 = W.copy()
        assert mod.lu_panel(W2, 0, 0, piv) == -1 and np.array_equal(W2, W)  # nothing to do


def _special(draw_codes, shape, rng):
    """A random matrix with entries replaced by special values (codes 1..7)."""
    A = rng.standard_normal(shape)
    values = [None, 0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -1074, 1e300]
    for code, pos in draw_codes:
        if code:
            A.flat[pos % A.size] = values[code]
    return A


@given(m=st.integers(1, 40), n=st.integers(1, 40), data=st.data(),
       codes=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 10 ** 6)), max_size=6),
       seed=st.integers(0, 2 ** 32 - 1), columns=st.sampled_from([None, "zero", "repeated"]))
def test_compiled_lu_panel_same_bits_as_numpy_property(m, n, data, codes, seed, columns):
    from ozaki.linalg import kernels
    rng = np.random.default_rng(seed)
    A = _special(codes, (m, n), rng)
    if columns == "zero":
        A[:, rng.integers(n)] = 0.0
    elif columns == "repeated" and n > 1:
        with np.errstate(all="ignore"):  # inf * 0
            A[:, 1:] = A[:, :1] * rng.integers(-2, 3, (1, n - 1))
    K = min(m, n)
    k = data.draw(st.integers(0, K - 1))
    w = data.draw(st.integers(1, K - k))
    W1, W2 = A.copy(), A.copy()
    p1 = np.arange(K, dtype=np.int32)
    p2 = p1.copy()
    with np.errstate(all="ignore"):
        z1 = _ref_lu_panel(W1, k, w, p1)
    assert kernels.lu_panel(W2, k, w, p2) == z1
    assert np.array_equal(p1, p2)
    assert _same_bits(W1, W2)


def test_compiled_cholesky_block_same_bits_as_numpy(rng):
    from ozaki.linalg import kernels
    for n in (1, 2, 17, 64, 100):
        d = 10.0 ** rng.uniform(-100, 100, n)
        S = spd(rng, n)
        for A in (S, d[:, None] * S * d[None, :]):
            D1, D2 = A.copy(), A.copy()
            assert _ref_cholesky_block(D1) == -1
            kernels.cholesky_block(D2, 0)
            low = np.tril(np.ones((n, n), dtype=bool))
            assert _same_bits(D1[low], D2[low])
    A = spd(rng, 30)
    A[12, 12] = -1.0
    D1, D2 = A.copy(), A.copy()
    assert _ref_cholesky_block(D1) == 12
    with pytest.raises(np.linalg.LinAlgError, match="^20-th leading minor"):
        kernels.cholesky_block(D2, 7)
    low = np.tril(np.ones(A.shape, dtype=bool))
    low[12:, 12:] = False  # the steps before the failing pivot
    assert _same_bits(D1[low], D2[low])


@pytest.mark.parametrize("layout", ["C", "F", "T", "strided", "reversed"])
def test_compiled_triangular_kernels_same_bits_as_numpy(rng, layout):
    # q around the kernels' blocks of 64 columns (fewer, one, one more, several with a
    # remainder), odd and even n (rows go in pairs)
    from ozaki.linalg import kernels
    for n, q in ((1, 1), (9, 1), (40, 3), (57, 80), (2, 63), (33, 64), (16, 65), (31, 200)):
        T = rng.standard_normal((n, n)) + 4 * np.eye(n)
        T[np.arange(n), np.arange(n)] *= 10.0 ** rng.uniform(-3, 3, n)
        B0 = rng.standard_normal((n, q)) * 10.0 ** rng.uniform(-50, 50, (n, 1))
        if layout == "T":
            T = np.ascontiguousarray(T.T).T  # a transposed (F-ordered) view, as in trsm
        for lower, unit in ((True, True), (True, False), (False, True), (False, False)):
            if layout == "F":
                B1, B2 = np.asfortranarray(B0), np.asfortranarray(B0)
            elif layout == "strided":
                B1 = B0.copy()
                B2 = np.zeros((2 * n, 2 * q))[::2, ::2]
                B2[...] = B0
            elif layout == "reversed":  # negative strides
                B1, B2 = B0.copy(), B0[::-1, ::-1].copy()[::-1, ::-1]
            else:
                B1, B2 = B0.copy(), B0.copy()
            if lower:
                _ref_lower_solve(T, B1, unit)
                if unit:
                    kernels.unit_lower_solve(T, B2)
                else:
                    kernels.lower_solve(T, B2, False)
            else:
                _ref_upper_solve(T, B1, unit)
                kernels.upper_solve(T, B2, unit)
            assert _same_bits(np.ascontiguousarray(B1), np.ascontiguousarray(B2)), \
                (n, q, lower, unit)
    # a zero on the diagonal: IEEE infinities and NaNs, as numpy, never an exception
    T = np.tril(rng.standard_normal((6, 6)))
    T[2, 2] = 0.0
    B1, B2 = np.ones((6, 2)), np.ones((6, 2))
    with np.errstate(all="ignore"):
        _ref_lower_solve(T, B1, False)
    kernels.lower_solve(T, B2, False)
    assert _same_bits(B1, B2)


@pytest.mark.parametrize("lower, unit", [(True, True), (True, False), (False, False)])
def test_compiled_triangular_kernels_same_bits_on_any_thread_count(rng, lower, unit):
    # large enough for the pass threads (n^2 q >= 2^22), a last block of 44 columns
    from ozaki.backends.cpu import parallel
    from ozaki.linalg import kernels
    n, q = 128, 300
    T = rng.standard_normal((n, n)) + 4 * np.eye(n)
    B0 = rng.standard_normal((n, q))
    B0[5, 7], B0[100, 299] = np.inf, np.nan
    B1 = B0.copy()
    with np.errstate(all="ignore"):
        (_ref_lower_solve if lower else _ref_upper_solve)(T, B1, unit)
    for threads in (1, 2, 3):
        B2 = np.asfortranarray(B0) if threads == 3 else B0.copy()
        with parallel.limit(threads):
            if lower:
                kernels.lower_solve(T, B2, unit)
            else:
                kernels.upper_solve(T, B2, unit)
        assert _same_bits(B1, np.ascontiguousarray(B2)), threads

"""ozaki.linalg on complex and single-precision input (zgetrf/zpotrf semantics, scipy's
dtypes) and the BLAS-form trsm/syrk against scipy.linalg.blas."""

import itertools

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import blas
from threadpoolctl import threadpool_limits

import ozaki
from ozaki import linalg as ol

U = 2.0 ** -53


def crandom(rng, m, n=None):
    n = m if n is None else n
    return rng.standard_normal((m, n)) + 1j * rng.standard_normal((m, n))


def hpd(rng, n):
    G = crandom(rng, n)
    return G @ G.conj().T + n * np.eye(n)


def hpl_residual(A, x, b):
    """HPL's ||Ax - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n), eps = 2^-53, with
    the residual computed in long double."""
    n = A.shape[0]
    ld = np.clongdouble
    r = np.abs(A.astype(ld) @ x.astype(ld) - b.astype(ld)).max()
    scale = np.abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()
    return float(r / (U * scale * n))


def lu_backward_error(A, lu_, piv):
    """||P^T A - L U||_inf / (||A||_inf max(m, n) u), the product in long double."""
    m, n = A.shape
    K = min(m, n)
    PA = A.astype(np.clongdouble)
    for i, p in enumerate(piv):
        PA[[i, p]] = PA[[p, i]]
    L = (np.tril(lu_[:, :K], -1) + np.eye(m, K)).astype(np.clongdouble)
    R = PA - L @ np.triu(lu_[:K]).astype(np.clongdouble)
    return float(np.abs(R).sum(axis=1).max() / (np.abs(A).sum(axis=1).max() * max(m, n) * U))


def _bits(*arrays):
    return [np.ascontiguousarray(a).tobytes() for a in arrays]


# --- LU: zgetrf's pivots, accuracy -------------------------------------------------------

@pytest.mark.parametrize("shape, nb", [((1, 1), 8), ((37, 37), 8), ((100, 100), 32),
                                       ((90, 40), 16), ((40, 90), 16)])
def test_lu_factor_matches_zgetrf(rng, shape, nb):
    A = crandom(rng, *shape)
    lu_, piv = ol.lu_factor(A, block_size=nb)
    lu2, piv2 = sl.lu_factor(A)
    assert lu_.dtype == np.complex128 and piv.dtype == piv2.dtype == np.int32
    np.testing.assert_array_equal(piv, piv2)
    assert lu_backward_error(A, lu_, piv) <= 2.0
    np.testing.assert_allclose(lu_, lu2, rtol=0, atol=1e-11 * np.abs(lu2).max())
    for kw in ({}, {"permute_l": True}, {"p_indices": True}):
        got, want = ol.lu(A, block_size=nb, **kw), sl.lu(A, **kw)
        for x, y in zip(got, want, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-11 * max(1, np.abs(y).max()))


def test_pivot_is_cabs1_first_largest():
    # |3| > |2 + 2i| but cabs1 (|Re| + |Im|) is 3 < 4: izamax, hence zgetrf, takes row 1
    A = np.array([[3, 1], [2 + 2j, 1j]])
    assert ol.lu_factor(A)[1][0] == sl.lu_factor(A)[1][0] == 1
    # ties in cabs1 (1; 1 + i, 2, -2i: all 2): the first one, though |1 + i| < 2
    A = np.array([[1, 0, 0, 0], [1 + 1j, 1, 0, 0], [2, 0, 1, 0], [-2j, 0, 0, 1]])
    assert ol.lu_factor(A)[1][0] == sl.lu_factor(A)[1][0] == 1
    # Gaussian integers: many ties at every step, the pivots are still LAPACK's
    rng = np.random.default_rng(3)
    G = rng.integers(-3, 4, (60, 60)) + 1j * rng.integers(-3, 4, (60, 60))
    for nb in (1, 7, 32):
        np.testing.assert_array_equal(ol.lu_factor(G, block_size=nb)[1], sl.lu_factor(G)[1])


@pytest.mark.parametrize("n, nb", [(1, 8), (60, 128), (150, 32)])
def test_complex_solves_hpl_residual(rng, n, nb):
    A = crandom(rng, n)
    B = crandom(rng, n, 3)
    x = ol.solve(A, B[:, 0], block_size=nb)
    assert x.shape == (n,) and hpl_residual(A, x[:, None], B[:, :1]) < 16
    assert hpl_residual(A.T, ol.solve(A, B, transposed=True, block_size=nb), B) < 16
    lu_piv = ol.lu_factor(A, block_size=nb)
    for trans, At in ((0, A), (1, A.T), (2, A.conj().T), ("C", A.conj().T)):
        X = ol.lu_solve(lu_piv, B, trans=trans, block_size=nb)
        assert hpl_residual(At, X, B) < 16
        if not isinstance(trans, str):
            np.testing.assert_allclose(X, sl.lu_solve(sl.lu_factor(A), B, trans=trans),
                                       rtol=1e-9, atol=1e-9)
    assert hpl_residual(A, ol.inv(A, block_size=nb), np.eye(n)) < 16
    d, d2 = ol.det(A, block_size=nb), sl.det(A)
    assert type(d) is type(d2) is np.complex128
    assert abs(d - d2) <= 1e-11 * abs(d2)
    # a real matrix with a complex right-hand side, and the other way round
    R = rng.standard_normal((n, n))
    assert hpl_residual(R, ol.solve(R, B, block_size=nb), B) < 16
    assert hpl_residual(A, ol.solve(A, B.real.copy(), block_size=nb), B.real) < 16


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1, 2, "C"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_complex(rng, lower, trans, unit):
    n = 70
    T = crandom(rng, n) + 3 * np.sqrt(n) * np.eye(n)  # the other triangle is garbage
    B = crandom(rng, n, 4)
    x = ol.solve_triangular(T, B, trans=trans, lower=lower, unit_diagonal=unit,
                            block_size=16)
    y = sl.solve_triangular(T, B, trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12 * np.abs(y).max())
    Tt = np.tril(T) if lower else np.triu(T)
    if unit:
        np.fill_diagonal(Tt, 1.0)
    op = {0: Tt, 1: Tt.T, 2: Tt.conj().T, "C": Tt.conj().T}[trans]
    assert hpl_residual(op, x, B) < 16


# --- Cholesky: zpotrf --------------------------------------------------------------------

@pytest.mark.parametrize("n, nb", [(1, 8), (33, 8), (100, 32)])
@pytest.mark.parametrize("lower", [False, True])
def test_hermitian_cholesky_matches_zpotrf(rng, n, nb, lower):
    A = hpd(rng, n)
    C = ol.cholesky(A, lower=lower, block_size=nb)
    C2 = sl.cholesky(A, lower=lower)
    np.testing.assert_allclose(C, C2, rtol=0, atol=1e-13 * np.abs(C2).max())
    assert np.all(np.diagonal(C).imag == 0) and np.all(np.diagonal(C).real > 0)
    R = C @ C.conj().T - A if lower else C.conj().T @ C - A
    assert np.abs(R).max() <= 8 * n * U * np.abs(A).max()
    # only the selected triangle, and the real part of its diagonal, is read
    X = crandom(rng, n)
    junk = A + (np.triu(X, 1) if lower else np.tril(X, -1)) + 1j * np.diag(
        rng.standard_normal(n))
    np.testing.assert_array_equal(ol.cholesky(junk, lower=lower, block_size=nb), C)
    c, low = ol.cho_factor(junk, lower=lower, block_size=nb)
    other = np.triu(np.ones((n, n), bool), 1)
    other = other if lower else other.T
    np.testing.assert_array_equal(c[other], junk[other])  # untouched, as zpotrf
    b = crandom(rng, n, 2)
    assert hpl_residual(A, ol.cho_solve((c, low), b, block_size=nb), b) < 16
    x = ol.solve(A, b, assume_a="pos", lower=lower, block_size=nb)
    assert hpl_residual(A, x, b) < 16
    xt = ol.solve(A, b, assume_a="pos", lower=lower, transposed=True, block_size=nb)
    assert hpl_residual(A.T, xt, b) < 16
    assert hpl_residual(A, ol.inv(A, assume_a="pos", block_size=nb), np.eye(n)) < 16


def test_not_positive_definite_as_zpotrf():
    A = np.array([[1, 2j], [-2j, 1]])
    with pytest.raises(np.linalg.LinAlgError) as want:
        sl.cholesky(A)
    with pytest.raises(np.linalg.LinAlgError) as got:
        ol.cholesky(A, block_size=1)
    assert str(got.value) == str(want.value)


# --- dtypes: scipy's ---------------------------------------------------------------------

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
          np.float64, np.complex64, np.complex128]


def _as(x, dt):
    return (x != 0) if dt is np.bool_ else x.astype(dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_dtypes_as_scipy(dt):
    M = np.array([[4, 1, 0], [1, 4, 1], [0, 1, 4]]) if dt is not np.bool_ else np.eye(3)
    A, b = _as(M, dt), _as(np.ones(3), dt)
    cases = {
        "lu_factor": lambda m: m.lu_factor(A), "lu": lambda m: m.lu(A),
        "lu/p": lambda m: m.lu(A, p_indices=True), "cholesky": lambda m: m.cholesky(A),
        "cho_factor": lambda m: m.cho_factor(A)[0], "solve": lambda m: m.solve(A, b),
        "solve/pos": lambda m: m.solve(A, b, assume_a="pos"), "inv": lambda m: m.inv(A),
        "det": lambda m: m.det(A), "solve_triangular": lambda m: m.solve_triangular(A, b),
        "lu_solve": lambda m: m.lu_solve((A, np.arange(3, dtype=np.int32)), b),
        "cho_solve": lambda m: m.cho_solve((A, False), b),
    }
    for name, f in cases.items():
        got, want = f(ol), f(sl)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for x, y in zip(got, want, strict=True):
            assert type(x) is type(y) and np.asarray(x).dtype == np.asarray(y).dtype, name
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("da, db", list(itertools.product(
    [np.bool_, np.int16, np.int64, np.float16, np.float32, np.float64, np.complex64,
     np.complex128], repeat=2)))
def test_mixed_dtypes_as_scipy(da, db):
    A = _as(np.array([[2, 0, 0], [1, 2, 0], [1, 1, 2]]), da)
    b = _as(np.array([1, 2, 3]), db)
    for f in (lambda m: m.solve(A, b), lambda m: m.solve_triangular(A, b, lower=True),
              lambda m: m.lu_solve((A, np.arange(3, dtype=np.int32)), b)):
        assert f(ol).dtype == f(sl).dtype
    for dc in (np.float32, np.complex64, np.float64):
        bb = np.ones((3, 2), dtype=dc)
        assert ol.trsm(1.0, A, bb).dtype == blas.get_blas_funcs("trsm", (A, bb)).dtype
    assert ol.syrk(1.0, A).dtype == blas.get_blas_funcs("syrk", (A,)).dtype


@pytest.mark.parametrize("single, double", [(np.float32, np.float64),
                                            (np.complex64, np.complex128)])
def test_single_precision_is_widened_then_rounded(rng, single, double):
    A = crandom(rng, 40) if single is np.complex64 else rng.standard_normal((40, 40))
    A = A.astype(single)
    S = (A @ A.conj().T + 40 * np.eye(40)).astype(single)
    b = A[:, :3].copy()
    lu_, piv = ol.lu_factor(A, block_size=16)
    lu64, piv64 = ol.lu_factor(A.astype(double), block_size=16)
    assert _bits(lu_, piv) == _bits(lu64.astype(single), piv64)
    assert _bits(ol.cholesky(S, block_size=16)) == _bits(
        ol.cholesky(S.astype(double), block_size=16).astype(single))
    assert _bits(ol.solve(A, b, block_size=16)) == _bits(
        ol.solve(A.astype(double), b.astype(double), block_size=16).astype(single))
    assert _bits(ol.trsm(2.0, A, b, lower=1, block_size=16)) == _bits(
        ol.trsm(2.0, A.astype(double), b.astype(double), lower=1, block_size=16)
        .astype(single))


# --- errors and inputs -------------------------------------------------------------------

@pytest.mark.parametrize("bad", [complex(np.nan, 0), complex(0, np.nan), complex(np.inf, 1),
                                 complex(1, -np.inf)])
def test_check_finite_complex(bad):
    A = np.eye(3, dtype=complex)
    A[1, 2] = bad
    for f in (ol.lu_factor, ol.lu, ol.cholesky, ol.cho_factor, ol.inv, ol.det):
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(A)
    for f in (ol.solve, ol.solve_triangular):
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(A, np.ones(3))
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(np.eye(3), np.array([1, bad, 1]))
    lu_, _ = ol.lu_factor(A, check_finite=False)
    assert not np.isfinite(lu_).all()


def test_errors_name_the_argument():
    Z = np.ones((2, 3), dtype=complex)
    for f in (ol.cholesky, ol.cho_factor, ol.inv, ol.det):
        with pytest.raises(ValueError, match="a must be a square matrix"):
            f(Z)
    for f in (ol.solve, ol.solve_triangular):
        with pytest.raises(ValueError, match="square"):
            f(Z, np.ones(2))
        with pytest.raises(ValueError, match=r"shapes of a \(2, 2\) and b \(3,\)"):
            f(np.eye(2) * 1j, np.ones(3))
    with pytest.raises(ValueError, match="a must have shape"):
        ol.trsm(1.0, np.eye(3), Z)                 # side 0: a is (2, 2)
    ol.trsm(1.0, np.eye(3), Z, side=1)             # side 1: a is (3, 3)
    with pytest.raises(ValueError, match="b must be a 2-D array"):
        ol.trsm(1.0, np.eye(3), np.ones(3))
    for kw, name in (({"side": 2}, "side"), ({"lower": -1}, "lower"), ({"diag": 0.5}, "diag"),
                     ({"trans_a": 3}, "trans")):
        with pytest.raises(ValueError, match=name):
            ol.trsm(1.0, np.eye(2), np.ones((2, 2)), **kw)
    with pytest.raises(TypeError, match="alpha"):
        ol.trsm("1", np.eye(2), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"c must have shape \(2, 2\)"):
        ol.syrk(1.0, Z, beta=1.0, c=np.ones((3, 3)))
    with pytest.raises(ValueError, match="trans=2"):
        ol.syrk(1.0, Z, trans=2)
    with pytest.raises(TypeError, match="beta"):
        ol.syrk(1.0, Z, beta=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'shceme'"):
        ol.syrk(1.0, Z, shceme="int8")


def test_inputs_untouched_unless_overwrite(rng):
    A, S, B = crandom(rng, 40), hpd(rng, 40), crandom(rng, 40, 3)
    A0, S0, B0 = A.copy(), S.copy(), B.copy()
    ol.lu_factor(A, block_size=16)
    ol.lu_solve(ol.lu_factor(A0), B, trans=2, block_size=16)
    ol.lu(A, block_size=16)
    ol.solve(A, B, transposed=True, block_size=16)
    ol.solve(S, B, assume_a="pos", transposed=True, block_size=16)
    ol.inv(A, block_size=16)
    ol.det(A, block_size=16)
    ol.cho_solve(ol.cho_factor(S, block_size=16), B, block_size=16)
    ol.solve_triangular(A, B, trans="C", block_size=16)
    ol.trsm(2j, A, B, trans_a=2, block_size=16)
    ol.trsm(2j, A, B.T, side=1, block_size=16)
    ol.syrk(1j, A, beta=2.0, c=S, block_size=16)
    for x, x0 in ((A, A0), (S, S0), (B, B0)):
        np.testing.assert_array_equal(x, x0)
    W = A0.copy(order="F")
    assert ol.lu_factor(W, overwrite_a=True, block_size=16)[0] is W
    W = S0.copy()
    assert ol.cho_factor(W, overwrite_a=True, block_size=16)[0] is W
    bb = B0.copy()
    x = ol.trsm(1.0, np.tril(A0) + 10 * np.eye(40), bb, lower=1, overwrite_b=1)
    assert x is bb
    cc = S0.copy()
    assert ol.syrk(1.0, A0, beta=1.0, c=cc, overwrite_c=1) is cc
    c32 = S0.astype(np.complex64)  # complex64 cannot hold the complex128 work: left alone
    ol.syrk(1.0, A0.astype(np.complex64), beta=1.0, c=c32, overwrite_c=1)
    np.testing.assert_array_equal(c32, S0.astype(np.complex64))


# --- determinism -------------------------------------------------------------------------

def _complex_run(A, S, B, **opts):
    lu_, piv, info = ol.lu_factor(A, block_size=32, return_info=True, **opts)
    assert info.emulated_products > 0
    return _bits(lu_, piv, ol.lu_solve((lu_, piv), B, trans=2, block_size=32, **opts),
                 ol.cholesky(S, block_size=32, **opts),
                 ol.trsm(1 - 1j, A, B.T, side=1, trans_a=2, block_size=32, **opts),
                 ol.syrk(0.5j, A, beta=1.0, c=S, lower=1, block_size=32, **opts))


@pytest.mark.parametrize("options", [{}, {"scheme": "int8", "mode": "fast"}])
def test_bits_independent_of_threads(rng, options):
    A, S, B = crandom(rng, 130), hpd(rng, 130), crandom(rng, 130, 2)
    default = _complex_run(A, S, B, **options)
    with ozaki.set_workers(1), threadpool_limits(1):
        assert _complex_run(A, S, B, **options) == default


@pytest.mark.parametrize("mode", ["accurate", "fast"])
def test_bits_independent_of_engine(rng, mode):
    A, S, B = crandom(rng, 96), hpd(rng, 96), crandom(rng, 96, 2)
    got = [_complex_run(A, S, B, scheme="int8", mode=mode, engine=engine)
           for engine in ("cpu-blas", "cpu-int8")]
    assert got[0] == got[1]


# --- trsm and syrk against scipy.linalg.blas ---------------------------------------------

def _layouts(X):
    """``X`` as C, Fortran, transposed-view and strided arrays (the same values)."""
    S = np.zeros((2 * X.shape[0], 3 * X.shape[1]), dtype=X.dtype)[::2, ::3]
    S[...] = X
    return [X, np.asfortranarray(X), np.ascontiguousarray(X.T).T, S]


def _trsm_case(rng, cplx, side, lower, trans, diag, m=45, n=21):
    """A well-conditioned triangle (the other triangle garbage), b, alpha."""
    k = n if side else m
    r = crandom if cplx else (lambda g, p, q=None: g.standard_normal((p, p if q is None else q)))
    A = r(rng, k) + 2 * np.sqrt(k) * np.eye(k)
    return A, r(rng, m, n), (0.75 - 0.5j) if cplx else -1.5


@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("side, lower", list(itertools.product((0, 1), (0, 1))))
def test_trsm_against_blas(rng, cplx, side, lower):
    f = blas.ztrsm if cplx else blas.dtrsm
    for i, (trans, diag) in enumerate(itertools.product((0, 1, 2), (0, 1))):
        A, B, alpha = _trsm_case(rng, cplx, side, lower, trans, diag)
        want = f(alpha, A, B, side=side, lower=lower, trans_a=trans, diag=diag)
        T = (np.tril(A) if lower else np.triu(A)).astype(np.clongdouble)
        if diag:
            np.fill_diagonal(T, 1)
        opT = {0: T, 1: T.T, 2: T.conj().T}[trans]
        for a, b in ((_layouts(A)[i % 4], _layouts(B)[(i + side + lower) % 4]),):
            x = ol.trsm(alpha, a, b, side=side, lower=lower, trans_a=trans, diag=diag,
                        block_size=8)
            assert x.dtype == want.dtype and x.shape == want.shape
            np.testing.assert_allclose(x, want, rtol=0, atol=1e-12 * np.abs(want).max())
            # FP64-grade: residual per entry within a few n u |op(T)| |X| (long double)
            X = x.astype(np.clongdouble)
            R, scale = (opT @ X, np.abs(opT) @ np.abs(X)) if side == 0 else \
                (X @ opT, np.abs(X) @ np.abs(opT))
            assert np.all(np.abs(R - alpha * B) <= 4 * A.shape[0] * U * scale)


@pytest.mark.parametrize("cplx", [False, True])
def test_syrk_against_blas(rng, cplx):
    f = blas.zsyrk if cplx else blas.dsyrk
    r = crandom if cplx else (lambda g, p, q: g.standard_normal((p, q)))
    for trans, lower in itertools.product((0, 1), (0, 1)):
        a = r(rng, 50, 23) if trans == 0 else r(rng, 23, 50)
        c = r(rng, 50, 50)
        opa = (a if trans == 0 else a.T).astype(np.clongdouble)
        tri = np.tril if lower else np.triu
        for alpha, beta in ((1.0, 0.0), (2 - 1j if cplx else 2.0, 0.5), (0.0, -2.0),
                            (1.0, 1.0), (-0.5, 1j if cplx else 3.0)):
            want = f(alpha, a, beta=beta, c=c, trans=trans, lower=lower)
            ref = alpha * (opa @ opa.T) + beta * c.astype(np.clongdouble)
            bound = 4 * U * (abs(alpha) * (np.abs(opa) @ np.abs(opa).T) + abs(beta) * np.abs(c))
            layouts = zip(_layouts(a), _layouts(c)) if beta == 0.5 else [(a, c)]
            for aa, cc in layouts:
                got = ol.syrk(alpha, aa, beta=beta, c=cc, trans=trans, lower=lower,
                              block_size=7)
                assert got.dtype == want.dtype
                keep = tri(np.ones((50, 50), bool))
                np.testing.assert_array_equal(got[~keep], c[~keep])  # as BLAS leaves it
                assert np.all(np.abs(got - ref)[keep] <= bound[keep])
                np.testing.assert_allclose(got[keep], want[keep], rtol=0,
                                           atol=1e-13 * np.abs(want).max())
        got = ol.syrk(1.0, a, trans=trans, lower=lower, block_size=16)  # c None: zeros
        assert np.all(got[~tri(np.ones((50, 50), bool))] == 0)
    # beta = 0 does not read c; alpha = 0 does not read a (NaNs stay out), as BLAS
    a, c = r(rng, 6, 4), np.full((6, 6), np.nan)
    assert np.isfinite(np.tril(ol.syrk(1.0, a, beta=0.0, c=c, lower=1))).all()
    got = ol.syrk(0.0, np.full((6, 4), np.nan), beta=2.0, c=np.ones((6, 6)), lower=1)
    np.testing.assert_array_equal(np.tril(got), np.tril(np.full((6, 6), 2.0)))


def test_trsm_alpha_zero_reads_nothing():
    x = ol.trsm(0.0, np.full((3, 3), np.nan), np.full((3, 2), np.inf))
    np.testing.assert_array_equal(x, np.zeros((3, 2)))
    np.testing.assert_array_equal(x, blas.dtrsm(0.0, np.full((3, 3), np.nan),
                                                np.full((3, 2), np.inf)))


# --- property: random shapes, scales and flags --------------------------------------------

@settings(max_examples=25)
@given(n=st.integers(1, 40), nb=st.integers(1, 20), e=st.integers(-300, 300),
       seed=st.integers(0, 2 ** 32 - 1), flags=st.tuples(*[st.integers(0, 1)] * 3),
       trans=st.integers(0, 2))
def test_property_lu_and_trsm(n, nb, e, seed, flags, trans):
    g = np.random.default_rng(seed)
    A = crandom(g, n) * 2.0 ** e
    lu_, piv = ol.lu_factor(A, block_size=nb)
    np.testing.assert_array_equal(piv, sl.lu_factor(A)[1])
    assert lu_backward_error(A, lu_, piv) <= 2.0
    side, lower, diag = flags
    B = crandom(g, n, 3) if side == 0 else crandom(g, 3, n)
    # the factors as O(1) triangles (L: multipliers of cabs1 <= 1; U / 2^e), scaled by 2^e
    # unless the diagonal is unit (then the right-hand side is)
    M = np.tril(lu_, -1) + np.eye(n) if lower else np.triu(lu_) * 2.0 ** -e
    T, B = (M, B * 2.0 ** e) if diag else (M * 2.0 ** e, B)
    x = ol.trsm(1.0, T, B, side=side, lower=lower, trans_a=trans, diag=diag, block_size=nb)
    assert x.dtype == np.complex128 and np.isfinite(x).all()
    Tl = T.astype(np.clongdouble)
    if diag:
        np.fill_diagonal(Tl, 1)
    opT = {0: Tl, 1: Tl.T, 2: Tl.conj().T}[trans]
    X = x.astype(np.clongdouble)
    R, scale = (opT @ X, np.abs(opT) @ np.abs(X)) if side == 0 else \
        (X @ opT, np.abs(X) @ np.abs(opT))
    assert np.all(np.abs(R - B) <= 4 * n * U * scale)


# --- the compiled complex kernels against a numpy formulation on real and imaginary parts --

def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


def _smith(dr, di):
    if abs(dr) >= abs(di):
        r = di / dr
        return True, r, dr + di * r
    r = dr / di
    return False, r, di + dr * r


def _cdiv(xr, xi, s):
    big, r, t = s
    if big:
        return (xr + xi * r) / t, (xi - xr * r) / t
    return (xr * r + xi) / t, (xi * r - xr) / t


def _ref_lu_panel(Wr, Wi, k, w, piv):
    zero = -1
    end = k + w
    for j in range(k, end):
        p = j + int(np.argmax(np.abs(Wr[j:, j]) + np.abs(Wi[j:, j])))  # first max / NaN
        piv[j] = p
        if Wr[p, j] != 0 or Wi[p, j] != 0:
            if p != j:
                Wr[[j, p]], Wi[[j, p]] = Wr[[p, j]], Wi[[p, j]]
            Wr[j + 1:, j], Wi[j + 1:, j] = _cdiv(Wr[j + 1:, j], Wi[j + 1:, j],
                                                 _smith(Wr[j, j], Wi[j, j]))
        elif zero < 0:
            zero = j
        if j + 1 < end:
            pr, pi = _cmul(Wr[j + 1:, j, None], Wi[j + 1:, j, None],
                           Wr[None, j, j + 1:end], Wi[None, j, j + 1:end])
            Wr[j + 1:, j + 1:end] -= pr
            Wi[j + 1:, j + 1:end] -= pi
    return zero


def _ref_cholesky_block(Dr, Di):
    n = Dr.shape[0]
    for j in range(n):
        if not Dr[j, j] > 0:
            return j
        r = np.sqrt(Dr[j, j])
        Dr[j, j], Di[j, j] = r, 0.0
        Dr[j + 1:, j] /= r
        Di[j + 1:, j] /= r
        lr, li = Dr[j + 1:, j], Di[j + 1:, j]
        pr, pi = _cmul(lr[:, None], li[:, None], lr[None, :], -li[None, :])
        Dr[j + 1:, j + 1:] -= pr
        Di[j + 1:, j + 1:] -= pi
    return -1


def _ref_solve(Tr, Ti, Br, Bi, lower, unit):
    n = Tr.shape[0]
    for i in (range(n) if lower else range(n - 1, -1, -1)):
        if not unit:
            Br[i], Bi[i] = _cdiv(Br[i], Bi[i], _smith(Tr[i, i], Ti[i, i]))
        rows = slice(i + 1, n) if lower else slice(0, i)
        pr, pi = _cmul(Tr[rows, i, None], Ti[rows, i, None], Br[i], Bi[i])
        Br[rows] -= pr
        Bi[rows] -= pi


def _same(z, re, im):
    """complex ``z`` has the bits of ``re`` and ``im`` (NaN positions compared only)."""
    for x, y in ((z.real, re), (z.imag, im)):
        nx, ny = np.isnan(x), np.isnan(y)
        if not (np.array_equal(nx, ny) and np.array_equal(x[~nx].view(np.int64),
                                                          y[~ny].view(np.int64))):
            return False
    return True


def _complex_panels(rng):
    yield "random", crandom(rng, 70, 90)
    yield "tall", crandom(rng, 130, 40)
    yield "graded", crandom(rng, 50, 50) * 10.0 ** np.linspace(-150, 150, 50)
    yield "gaussian integers", rng.integers(-2, 3, (64, 64)) + 1j * rng.integers(-2, 3, (64, 64))
    Z = crandom(rng, 48, 48)
    Z[:, 5] = 0
    Z[:, 20] = complex(-0.0, 0.0)
    Z[:, 30] = Z[:, 2]
    Z[:, 31] = 1j * Z[:, 2].imag  # purely imaginary column: Smith's other branch
    yield "zero columns", Z
    N = crandom(rng, 40, 40)
    N[7, 3] = complex(1, np.nan)
    N[9, 3] = complex(np.inf, 0)
    N[20, 11] = complex(-np.inf, 1)
    yield "nan and inf", N
    yield "tall, several row tiles", crandom(rng, 300, 40)
    yield "wide, square panel", crandom(rng, 20, 120)
    C = crandom(rng, 30, 30)
    C[:, 0] = 0
    C[4, 0], C[9, 0] = complex(1, -2), complex(-2, 1)  # a cabs1 tie: the first wins
    C[:, 1] = complex(0.0, -0.0)
    C[17, 1] = complex(np.nan, 0)  # after step 0, a NaN part in column 1 wins
    yield "cabs1 ties and NaN parts", C


@pytest.mark.parametrize("k, w", [(0, 1), (0, 17), (0, 33), (5, 16), (11, 29), (0, 40)])
def test_compiled_complex_lu_panel_same_bits_as_numpy(rng, k, w):
    from ozaki.linalg import zkernels
    for name, A in _complex_panels(rng):
        ww = min(w, min(A.shape) - k)
        Wr, Wi, W = A.real.copy(), A.imag.copy(), A.astype(complex)
        p1 = np.arange(min(A.shape), dtype=np.int32)
        p2 = p1.copy()
        with np.errstate(all="ignore"):
            z1 = _ref_lu_panel(Wr, Wi, k, ww, p1)
        assert zkernels.lu_panel(W, k, ww, p2) == z1, name
        assert np.array_equal(p1, p2), name
        assert _same(W, Wr, Wi), name


def test_compiled_complex_cholesky_and_solves_same_bits_as_numpy(rng):
    from ozaki.linalg import zkernels
    for n in (1, 17, 64):
        d = 10.0 ** rng.uniform(-100, 100, n)
        for A in (hpd(rng, n), d[:, None] * hpd(rng, n) * d[None, :]):
            Dr, Di, D = A.real.copy(), A.imag.copy(), A.copy()
            assert _ref_cholesky_block(Dr, Di) == -1
            zkernels.cholesky_block(D, 0)
            low = np.tril(np.ones((n, n), dtype=bool))
            assert _same(D[low], Dr[low], Di[low])
    # q around the kernels' blocks of 32 columns, odd and even n (rows go in pairs)
    for n, q in ((1, 1), (9, 2), (40, 3), (57, 80), (2, 31), (16, 32), (13, 33), (20, 70)):
        T = crandom(rng, n) + 4 * np.eye(n)
        T[np.arange(n), np.arange(n)] *= 10.0 ** rng.uniform(-3, 3, n) * np.exp(
            1j * rng.uniform(0, 2 * np.pi, n))
        B0 = crandom(rng, n, q) * 10.0 ** rng.uniform(-50, 50, (n, 1))
        for (lower, unit), layout in itertools.product(
                itertools.product((True, False), (True, False)),
                ("C", "F", "strided", "reversed")):
            Br, Bi = B0.real.copy(), B0.imag.copy()
            B = {"C": B0.copy(), "F": np.asfortranarray(B0),
                 "reversed": B0[::-1, ::-1].copy()[::-1, ::-1]}.get(layout)
            if B is None:
                B = np.zeros((2 * n, 2 * q), dtype=complex)[::2, ::2]
                B[...] = B0
            _ref_solve(T.real, T.imag, Br, Bi, lower, unit)
            if lower:
                zkernels.lower_solve(T, B, unit)
            else:
                zkernels.upper_solve(T, B, unit)
            assert _same(B, Br, Bi), (n, q, lower, unit, layout)


def test_compiled_complex_solves_same_bits_on_any_thread_count(rng):
    # large enough for the pass threads (n^2 q >= 2^20), a last block of 12 columns
    from ozaki.backends.cpu import parallel
    from ozaki.linalg import zkernels
    n, q = 64, 300
    T = crandom(rng, n) + 4 * np.eye(n)
    B0 = crandom(rng, n, q)
    B0[3, 4] = complex(np.inf, 1)
    for lower, unit in ((True, True), (False, False)):
        Br, Bi = B0.real.copy(), B0.imag.copy()
        with np.errstate(all="ignore"):
            _ref_solve(T.real, T.imag, Br, Bi, lower, unit)
        for threads in (1, 2, 3):
            B = np.asfortranarray(B0) if threads == 3 else B0.copy()
            with parallel.limit(threads):
                (zkernels.lower_solve if lower else zkernels.upper_solve)(T, B, unit)
            assert _same(B, Br, Bi), (lower, threads)

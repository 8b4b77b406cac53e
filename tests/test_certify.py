"""The accuracy contract: certified bounds hold, auto meets the target or says so."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ozaki
from ozaki.core import certify
from ozaki.backends import get_backend
from ozaki.core.certify import CertificationError
from validation.reference import exact_matmul, fraction_matmul, test_matrix

U = Fraction(1, 2 ** 53)
SCHEMES = ["int8", "fp8", "fp64", "int7"]


def exact_abs(A, B):
    return fraction_matmul(np.abs(A), np.abs(B))


def check_bound(A, B, C, bound):
    """|C - AB| <= bound, in exact rational arithmetic."""
    exact = fraction_matmul(A, B)
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            assert abs(Fraction(C[i, j]) - exact[i][j]) <= Fraction(bound[i, j]), (i, j)


def meets_target(A, B, C):
    """Per-entry flags of |C - AB| <= u |AB| + u |A||B| (exact)."""
    exact, absab = fraction_matmul(A, B), exact_abs(A, B)
    return np.array([[abs(Fraction(C[i, j]) - exact[i][j]) <= U * abs(exact[i][j]) + U * absab[i][j]
                      for j in range(C.shape[1])] for i in range(C.shape[0])])


def hard_cases(rng):
    cases = {}
    A, B = test_matrix(5, 64, 1.0, rng), test_matrix(64, 4, 1.0, rng)
    A[2] = 0.0
    B[:, 1] = 0.0
    cases["zero row and column"] = (A, B)
    A = test_matrix(4, 40, 0.0, rng)
    A[:, ::3] *= 1e300
    A[:, 1::3] *= 1e-300
    cases["1e-300 to 1e300 in a row"] = (A, test_matrix(40, 3, 0.0, rng))
    A = test_matrix(3, 30, 0.5, rng) * 2.0 ** -1060
    cases["subnormals"] = (A, test_matrix(30, 3, 0.5, rng) * 2.0 ** 1000)
    A = test_matrix(3, 20, 0.5, rng) * 1e300
    cases["near overflow"] = (A, test_matrix(20, 4, 0.5, rng) * 1e5)
    A = test_matrix(4, 50, 1.0, rng)
    B = test_matrix(50, 3, 1.0, rng)
    B[:, 2] = B[:, 0]
    A[:, -1] = 0.0
    x = -(A[:, :-1] @ B[:-1, 0])  # make column 0 of AB (nearly) cancel
    A[:, -1] = x / B[-1, 0]
    cases["cancellation"] = (A, B)
    cases["k = 1"] = (test_matrix(4, 1, 2.0, rng), test_matrix(1, 5, 2.0, rng))
    return cases


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("phi", [0.5, 2.0, 4.0])
def test_bound_holds_for_every_count(scheme, phi, rng):
    A, B = test_matrix(4, 96, phi, rng), test_matrix(96, 3, phi, rng)
    for n in (3, 7, 12, 20):
        C, info = ozaki.dgemm(A, B, scheme=scheme, num_moduli=n, bounds=True)
        assert info.bound_kind == "componentwise" and info.fallback == "none"
        check_bound(A, B, C, info.error_bound)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_bound_and_target_on_hard_inputs(scheme, rng):
    for name, (A, B) in hard_cases(rng).items():
        C, info = ozaki.dgemm(A, B, scheme=scheme, bounds=True)
        assert np.all(np.isfinite(C)), name
        ok = meets_target(A, B, C)
        if info.fallback == "none":
            assert info.certified and ok.all(), name
            check_bound(A, B, C, info.error_bound)
        else:  # entries that could not be certified were recomputed exactly
            assert info.fallback == "exact" and info.fallback_entries == info.uncertified > 0
            check_bound(A, B, C, info.error_bound)


def test_zero_rows_and_columns_are_exact_zeros(rng):
    A, B = hard_cases(rng)["zero row and column"]
    C, info = ozaki.dgemm(A, B, return_info=True)
    assert info.certified and np.all(C[2] == 0) and np.all(C[:, 1] == 0)


def test_auto_meets_target_at_phi_up_to_one_without_fallback(rng):
    for phi in (0.0, 0.5, 1.0):
        A, B = test_matrix(6, 256, phi, rng), test_matrix(256, 5, phi, rng)
        for scheme in SCHEMES:
            C, info = ozaki.dgemm(A, B, scheme=scheme, return_info=True)
            assert info.certified and info.fallback == "none" and info.max_bound_ratio <= 1
            assert meets_target(A, B, C).all()
            # the smallest certified count: one fewer does not certify
            if info.num_moduli > 2:
                _, below = ozaki.dgemm(A, B, scheme=scheme, num_moduli=info.num_moduli - 1,
                                       return_info=True)
                assert below.max_bound_ratio > 1 or below.num_moduli < info.num_moduli


def test_auto_count_is_the_same_on_every_engine(rng):
    A, B = test_matrix(5, 200, 2.0, rng), test_matrix(200, 4, 2.0, rng)
    results = [ozaki.dgemm(A, B, scheme="fp8", engine=e, return_info=True)
               for e in ("cpu-blas", "cpu-fp8", "cpu-int8")]
    assert len({r[1].num_moduli for r in results}) == 1
    assert all(np.array_equal(r[0].view(np.int64), results[0][0].view(np.int64)) for r in results)


def test_fallback_policies(rng):
    # (AB)_00 = 1 comes from 1e-300 * 1e300, invisible next to the 1e300 in row 0
    A = np.array([[1e300, 1e-300, 1.0], [2.0, 3.0, -1.0], [0.5, 1e-300, 4.0]])
    B = np.array([[0.0, 1.0], [1e300, 1.0], [0.0, 2.0]])
    C, info = ozaki.dgemm(A, B, scheme="int8", fallback="none", return_info=True)
    assert info.uncertified > 0 and info.fallback == "none" and info.fallback_entries == 0
    Cn, infon = ozaki.dgemm(A, B, scheme="int8", return_info=True)  # auto -> exact
    assert infon.fallback == "exact" and infon.fallback_entries == infon.uncertified
    rows, cols = infon.fallback_block
    assert 0 < rows * cols <= C.size
    assert Cn[0, 0] == 1.0 and C[0, 0] != 1.0
    assert np.sum(Cn != C) <= infon.fallback_entries
    with pytest.raises(CertificationError, match=r"cannot be certified .* C\[\d+, \d+\]"):
        ozaki.dgemm(A, B, scheme="int8", fallback="raise")
    with pytest.raises(ValueError, match="fallback must be one of"):
        ozaki.dgemm(A, B, fallback="maybe")


def test_raise_says_how_many_bits(rng):
    A, B = test_matrix(4, 64, 1.0, rng), test_matrix(64, 3, 1.0, rng)
    with pytest.raises(CertificationError, match=r"about \d+ more bits of P"):
        ozaki.dgemm(A, B, scheme="int8", num_moduli=8, fallback="raise")


@pytest.mark.parametrize("mode", ["accurate", "fast"])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_auto_is_scale_invariant(mode, scheme, rng):
    A, B = test_matrix(6, 120, 1.0, rng), test_matrix(120, 5, 1.0, rng)
    C, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, return_info=True)
    for e in (-200, 37, 300):
        C2, info2 = ozaki.dgemm(np.ldexp(A, e), B, scheme=scheme, mode=mode, return_info=True)
        assert info2.num_moduli == info.num_moduli
        assert np.array_equal(C2, np.ldexp(C, e))


def test_fast_mode_certifies_the_normwise_form(rng):
    for phi in (0.5, 2.0):
        A, B = test_matrix(5, 300, phi, rng), test_matrix(300, 4, phi, rng)
        C, info = ozaki.dgemm(A, B, mode="fast", scheme="int8", return_info=True)
        assert info.bound_kind == "normwise" and info.certified
        exact = fraction_matmul(A, B)
        na = np.linalg.norm(A, axis=1)
        nb = np.linalg.norm(B, axis=0)
        for i in range(5):
            for j in range(4):
                err = abs(Fraction(C[i, j]) - exact[i][j])
                target = U * abs(exact[i][j]) + U * Fraction(na[i] * nb[j])
                assert err <= target * Fraction(1 + 2 ** -40)


@pytest.mark.slow
def test_large_k_certified(rng):
    k = 2 ** 20
    A, B = test_matrix(2, k, 1.0, rng), test_matrix(k, 2, 1.0, rng)
    ref = exact_matmul(A, B)
    absab = np.abs(A) @ np.abs(B)
    for scheme in SCHEMES:
        C, info = ozaki.dgemm(A, B, scheme=scheme, return_info=True)
        assert info.certified, scheme
        half_ulp = np.spacing(np.abs(ref)) / 2  # the reference is itself rounded
        assert np.all(np.abs(C - ref) <= 2.0 ** -53 * (np.abs(ref) + absab) * (1 + 1e-9) + half_ulp)


def _bound_inputs(seed, b, m, n, K, wide_exponents):
    """Random exact floor data with zero lines, and ``K`` sets of shifts and plan terms."""
    rng = np.random.default_rng(seed)
    k = 50
    nA = rng.integers(1, k + 1, (b, m))
    nB = rng.integers(1, k + 1, (b, n))
    nA[:, ::5] = 0
    nB[:, 1::7] = 0
    G = np.floor(rng.random((b, m, n)) * 2.0 ** rng.integers(20, 40, (b, m, 1)))
    G[0][rng.random(G[0].shape) < 0.1] = 0.0  # vanishing lower bounds: ratio inf
    G[(nA == 0)[:, :, None] | (nB == 0)[:, None, :]] = 0.0
    rF = np.where(nA > 0, np.floor(rng.random((b, m)) * 2.0 ** 20), 0.0)
    cF = np.where(nB > 0, np.floor(rng.random((b, n)) * 2.0 ** 20), 0.0)
    lo, hi = (-30, 1100) if wide_exponents else (-30, 60)
    e, f = rng.integers(lo, hi, (b, m)), rng.integers(lo, hi, (b, n))
    sigma = rng.integers(-10, 80, (K, b, m))
    tau = rng.integers(-10, 80, (K, b, n))
    sigma[:, -1] = rng.integers(60, 80, (K, m))  # the last slice certifies
    tau[:, -1] = rng.integers(60, 80, (K, n))
    R = rng.random((K, b)) * 2.0 ** rng.integers(-5, 60, (K, b))
    g2 = rng.random((K, b)) * 2.0 ** -70
    return G, rF, cF, nA, nB, e, f, sigma, tau, R, g2


def _reference_ratios(G, rF, cF, nA, nB, e, f, sigma, tau, R, g2, safety):
    """The certificate's per-entry ratio for one count, in numpy (the scalar formula)."""
    c = np.minimum(nA[:, :, None], nB[:, None, :]).astype(np.float64)
    live = (nA[:, :, None] > 0) & (nB[:, None, :] > 0)
    up = np.where(live, G + rF[:, :, None] + cF[:, None, :] + c, 0.0)
    ps, pt = np.ldexp(1.0, -sigma)[:, :, None], np.ldexp(1.0, -tau)[:, None, :]
    trunc = np.minimum(ps * (cF[:, None, :] + c) + pt * (rF[:, :, None] + c), 2.0 * up)
    ef = e[:, :, None] + f[:, None, :] - 1075
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        sub = np.where(ef > -100, np.ldexp(1.0, np.minimum(ef, 1100)), 2.0 ** -100)
        num = ((1.0 + 2.0 ** -53) * (trunc + (ps * pt) * R[:, None, None])
               + 2.0 * g2[:, None, None] * up + sub) * safety
        r = np.where(G > 0, num / (2.0 ** -53 * G), np.inf)
    return np.where(up == 0, 0.0, r), up


@pytest.mark.parametrize("shape", [(3, 7, 9), (2, 5, 1300), (4, 1, 3), (1, 3, 0)])
@pytest.mark.parametrize("wide_exponents", [False, True])
def test_fused_counts_equal_separate_counts(shape, wide_exponents):
    """The K-count passes give, per count, exactly the single-count passes and the formula."""
    from ozaki.backends.cpu import bounds
    from ozaki.core import certify
    b, m, n = shape
    K = 3
    G, rF, cF, nA, nB, e, f, sigma, tau, R, g2 = _bound_inputs(sum(shape), b, m, n, K,
                                                               wide_exponents)
    safety = certify._SAFETY
    col = bounds.upper_scaled_colmax(G, rF, cF, nA, nB, sigma)
    for q in range(K):
        one = bounds.upper_scaled_colmax(G, rF, cF, nA, nB, sigma[q:q + 1])
        assert np.array_equal(col[q], one[0])
    empty = np.zeros((0, 0, 0))
    rowmax, rowfail = bounds.componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f,
                                                  safety, empty, empty, np.zeros(K, bool))
    for q in range(K):
        ratio, bound = np.empty((b, m, n)), np.empty((b, m, n))
        mx, fl = bounds.componentwise_ratios(G, rF, cF, nA, nB, sigma[q:q + 1], tau[q:q + 1],
                                             R[q:q + 1], g2[q:q + 1], e, f, safety, ratio,
                                             bound, np.zeros(1, bool))
        assert np.array_equal(mx[0], rowmax[q]) and np.array_equal(fl[0], rowfail[q])
        ref, up = _reference_ratios(G, rF, cF, nA, nB, e, f, sigma[q], tau[q], R[q], g2[q],
                                    safety)
        assert np.array_equal(ratio, ref)
        assert np.array_equal(rowmax[q], ref.max(axis=2, initial=0.0))
        assert np.array_equal(rowfail[q], (ref > 1).sum(axis=2))
        assert np.array_equal(col[q], np.where(up > 0, np.ldexp(up, sigma[q][:, :, None]),
                                               0.0).max(axis=1, initial=0.0))
        if q == 0:  # the fused pass writes the first count's ratio and bound
            r0, b0 = np.empty((b, m, n)), np.empty((b, m, n))
            bounds.componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety,
                                        r0, b0, np.zeros(K, bool))
            assert np.array_equal(r0, ratio) and np.array_equal(b0, bound)
    # a probed count says only whether its slice certifies, and says it right
    probed = bounds.componentwise_ratios(G, rF, cF, nA, nB, sigma, tau, R, g2, e, f, safety,
                                         empty, empty, np.array([False, True, True]))
    assert np.array_equal(probed[0][0], rowmax[0]) and np.array_equal(probed[1][0], rowfail[0])
    for q in (1, 2):
        assert np.array_equal(probed[1][q].sum(axis=1) > 0, rowfail[q].sum(axis=1) > 0)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_fused_certificates_equal_separate_ones(scheme, rng):
    """``componentwise`` at (K, b) counts: each certificate is the one count's alone."""
    from ozaki.core import certify, decisions
    from ozaki.core.backend import Operand
    from ozaki.backends import get_backend
    from ozaki.backends.engines import get_engine
    from ozaki.core.operands import Prepared
    be = get_backend()
    A = rng.standard_normal((5, 12, 40)) * np.exp2(rng.integers(-30, 31, (5, 12, 40)))
    B = rng.standard_normal((5, 40, 9)) * np.exp2(rng.integers(-30, 31, (5, 40, 9)))
    A[1, 3] = 0.0
    B[2, :, 4] = 0.0
    pa, pb = Prepared(Operand(A, 0), be), Prepared(Operand(B, 1), be)
    bd, e, f, _ = decisions.bound_data(be, get_engine("auto", scheme), pa.op, pb.op, pa.lines,
                                       pb.lines, scheme, 40)
    data = (bd.G, bd.rF, bd.cF, pa.lines.nnz, pb.lines.nnz, e, f)
    counts = np.array([[4, 6, 9, 12, 16], [3, 5, 8, 11, 15], [5, 5, 5, 5, 5]])
    fused = certify.componentwise(be, *data, scheme, counts)
    for c, got in zip(counts, fused):
        want = certify.componentwise(be, *data, scheme, c)
        for name in ("num_moduli", "sigma", "tau", "max_ratio", "uncertified"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name


@pytest.mark.parametrize("k", [40, 2 ** 17])
def test_floor_gemm_in_fp32_where_exact_and_the_decisions_do_not_see_it(k, rng):
    """``G`` is FP32 where ``k (2**r - 1)**2 <= 2**24`` (k = 40), FP64 beyond
    (k = 2**17: r = 4); either way the exact integer product of the floors, and
    the certificate and shifts from an FP32 ``G`` are those from its FP64 copy."""
    from ozaki.core import decisions
    from ozaki.core.backend import Operand
    from ozaki.backends import get_backend
    from ozaki.backends.engines import get_engine
    from ozaki.core.operands import Prepared
    from ozaki.core.scaling import quantization_bits
    be = get_backend()
    A = rng.standard_normal((2, 6, k)) * np.exp2(rng.integers(-20, 21, (2, 6, k)))
    B = rng.standard_normal((2, k, 5)) * np.exp2(rng.integers(-20, 21, (2, k, 5)))
    A[1, 2] = 0.0
    pa, pb = Prepared(Operand(A, 0), be), Prepared(Operand(B, 1), be)
    bd, e, f, ((FA, _), (FB, _)) = decisions.bound_data(be, get_engine("auto", "fp64"), pa.op,
                                                        pb.op, pa.lines, pb.lines, "fp64", k)
    q = 2 ** quantization_bits("fp64", k) - 1
    assert bd.G.dtype == (np.float32 if k * q * q <= 2 ** 24 else np.float64)
    want = np.matmul(np.asarray(FA, np.int64), np.asarray(FB, np.int64))
    assert np.array_equal(bd.G, want)
    data = (bd.rF, bd.cF, pa.lines.nnz, pb.lines.nnz, e, f)
    counts = np.array([[10, 14], [9, 13]])
    got = certify.componentwise(be, bd.G, *data, "fp64", counts)
    ref = certify.componentwise(be, bd.G.astype(np.float64), *data, "fp64", counts)
    for c1, c2 in zip(got, ref):
        for name in ("num_moduli", "sigma", "tau", "max_ratio", "uncertified"):
            assert np.array_equal(getattr(c1, name), getattr(c2, name)), name


@given(st.integers(1, 3), st.integers(1, 40), st.integers(0, 2 ** 32))
def test_normwise_term_maxima_are_the_maxima_of_the_terms(b, n, seed):
    """The compiled maxima give the bits of the numpy terms' maxima, zero lines and
    exponents out of the normal range (0 and inf terms) included."""
    rng = np.random.default_rng(seed)
    E = rng.integers(-1100, 1100, (b, n))
    zero = rng.random((b, n)) < 0.3
    lo2 = rng.random((b, n)) + 2.0 ** -30
    nw = certify.Normwise(E, zero, lo2, 2 * lo2, rng.random((b, n)) * 64, 4 * lo2)
    shift = rng.integers(-1100, 1100, (b, n))
    with np.errstate(over="ignore"):
        x, alpha = nw.terms(shift)
    xm, am = nw.term_maxima(get_backend(), shift)
    assert xm.tobytes() == x.max(axis=1).tobytes()
    assert am.tobytes() == alpha.max(axis=1).tobytes()


@pytest.mark.parametrize("scale", [1e-290, 1e-305])
def test_operands_near_the_subnormal_edge_raise_no_warning(scale):
    """Fast mode's ratio overflows to inf for operands near the subnormal edge: those
    entries are uncertified and go to the exact fallback, with no RuntimeWarning."""
    import warnings
    from fractions import Fraction
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((30, 40)) * scale, rng.standard_normal((40, 20)) * scale
    got = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for backend in ("cpu", "numpy"):
            with ozaki.set_small_products(False):
                C, info = ozaki.dgemm(A, B, mode="fast", backend=backend, return_info=True)
            assert info.uncertified == info.fallback_entries > 0
            got.append(C)
    assert np.array_equal(got[0], got[1])
    exact = sum(Fraction(a) * Fraction(b) for a, b in zip(A[3], B[:, 5]))
    assert got[0][3, 5] == float(exact)  # the exactly rounded dot product


@pytest.mark.parametrize("num_moduli", ["auto", 16])
def test_refined_slices_of_a_stack_keep_their_own_ratios(num_moduli):
    """The decision's per-entry ratios live in planes of the thread's workspace, one a
    slice, rewritten by each refinement step and reused by the next call: stacks whose
    spread slices refine (beside a uniform slice that does not, or alone: the pass that
    reads the refinements' last steps) give each slice's own bits (result and fallback
    entries, from the mask of its ratios), call after call, with a call of another
    shape in between."""
    rng = np.random.default_rng(5)
    n = 96

    def spread():
        return rng.standard_normal((n, n)) * np.exp(2 * rng.standard_normal((n, n)))

    A = np.stack([spread(), rng.random((n, n)) - 0.5, spread()])
    B = np.stack([spread(), rng.random((n, n)) - 0.5, spread()])
    opts = dict(scheme="int8", num_moduli=num_moduli, fallback="exact")
    alone = [ozaki.dgemm(A[g], B[g], return_info=True, **opts) for g in range(3)]
    assert [i.refined_block != (0, 0) for _, i in alone] == [True, False, True]
    if num_moduli != "auto":
        assert all(i.fallback_entries > 0 for _, i in alone[::2])  # the mask matters
    for shape in ((n, n), (40, 70)):
        for pick in (slice(None), slice(None, None, 2)):
            C, info = ozaki.matmul(A[pick], B[pick], return_info=True, **opts)
            mine = alone[pick]
            assert [c.tobytes() for c in C] == [c.tobytes() for c, _ in mine]
            assert info.fallback_entries == sum(i.fallback_entries for _, i in mine)
        ozaki.dgemm(spread()[:shape[0]], spread()[:, :shape[1]], **opts)  # other planes

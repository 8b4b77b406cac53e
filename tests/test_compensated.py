"""The small-product path (ozaki.core.compensated): Dot2, certified entry by entry, and its rule."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ozaki
from ozaki.core import compensated
from ozaki.core.kind import COMPLEX, REAL
from ozaki.backends.cpu import parallel
from ozaki.backends.cpu.exactdot import exact_matmul

pytestmark = pytest.mark.compensated

U = Fraction(1, 2 ** 53)


def exact(A, B):
    """``A @ B`` in rationals."""
    Af = [[Fraction(float(x)) for x in row] for row in A]
    Bf = [[Fraction(float(x)) for x in col] for col in B.T]
    return [[sum((a * b for a, b in zip(r, c)), Fraction(0)) for c in Bf] for r in Af]


def check_contract(A, B, C, bound=None):
    """``|C - AB| <= u |AB| + u |A||B|`` (and ``<= bound``) entry by entry, in rationals."""
    E = exact(A, B)
    M = exact(np.abs(A), np.abs(B))
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            err = abs(Fraction(float(C[i, j])) - E[i][j])
            assert err <= U * abs(E[i][j]) + U * M[i][j], (i, j, float(err))
            if bound is not None:
                assert err <= Fraction(float(bound[i, j])), (i, j, float(err), bound[i, j])


def bits(x):
    return np.ascontiguousarray(x).view(np.int64)


@st.composite
def operands(draw):
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    spread = draw(st.sampled_from([0, 8, 60, 400]))
    rng = np.random.default_rng(seed)

    def make(shape):
        X = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape))
        X[rng.random(shape) < 0.2] = 0.0
        return X

    A, B = make((m, k)), make((k, n))
    if draw(st.booleans()):  # cancellation: B's column holds A's row and its negation
        A = np.concatenate([A, A], axis=1)
        B = np.concatenate([B, -B * (1 + 2.0 ** -40)], axis=0)
    return A, B


@given(operands(), st.sampled_from(["accurate", "fast"]))
def test_meets_the_accurate_contract_and_its_bound(AB, mode):
    A, B = AB
    C, info = ozaki.dgemm(A, B, mode=mode, bounds=True)
    assert info.path == "compensated" and info.num_moduli == 0 and info.gemms == 0
    check_contract(A, B, C, info.error_bound)
    assert 0.5 <= info.max_bound_ratio < 0.5 + 2.0 ** -20


def test_the_product_error_is_recovered_exactly_by_the_fused_multiply_add():
    # (1 + 2**-30)(1 - 2**-30) = 1 - 2**-60 rounds to 1: only an exact error term
    # (fma(a, b, -p), fused, not contracted or dropped) leaves -2**-60 after the 1 cancels
    a = 1 + 2.0 ** -30
    C = ozaki.dgemm(np.array([[a, -1.0]]), np.array([[2 - a], [1.0]]))
    assert C[0, 0] == -2.0 ** -60


def test_ill_conditioned_dot_products_meet_the_contract(rng):
    # sums of huge terms that cancel to a small result: Dot2's twice-working accuracy
    k = 40
    x = np.ldexp(rng.standard_normal(k), rng.integers(-40, 40, k))
    y = np.ldexp(rng.standard_normal(k), rng.integers(-40, 40, k))
    A = np.stack([np.concatenate([x, -x, [1.0]]), np.concatenate([x, x, [1e-30]])])
    B = np.concatenate([y, y * (1 + 2.0 ** -50), [3.0]])[:, None]
    C, info = ozaki.dgemm(A, B, bounds=True)
    check_contract(A, B, C, info.error_bound)
    assert info.exact_entries == 0


def test_unsafe_entries_take_the_exactly_rounded_dot_product(rng):
    sign = lambda shape: np.where(rng.random(shape) < 0.5, -1.0, 1.0)  # noqa: E731
    A = sign((5, 7)) * (1 + rng.random((5, 7)))  # exponents known: |x| in [1, 2)
    B = sign((7, 4)) * (1 + rng.random((7, 4)))
    A[1, 2] = 2.0 ** -895     # products down to 2**-895: safe ...
    B[0, 3] = 2.0 ** -60      # ... but with this column below 2**-900: entry (1, 3)
    A[3, 0] = 5e-324          # a subnormal: row 3 everywhere
    A[4, 6] = 2.0 ** 1020     # row 4: sums may pass 2**1021 everywhere
    A[0, 0] = 2.0 ** 990      # row 0 with column 2: sums may pass 2**1021
    B[1, 2] = 2.0 ** 30
    C, info = ozaki.dgemm(A, B, bounds=True)
    want = np.zeros((5, 4), bool)
    want[1, 3] = want[3, :] = want[4, :] = want[0, 2] = True
    assert info.exact_entries == want.sum()
    np.testing.assert_array_equal(bits(C[want]), bits(exact_matmul(A, B)[want]))
    check_contract(A, B, C, info.error_bound)


def test_underflowing_products_follow_the_fallback_policy():
    # the validation's subnormal family: no result in the subnormal range can meet a
    # purely relative target, so these entries are uncertified, as on the emulated path
    A = np.array([[5e-324, 0.0], [2.0 ** -1060, -2.0 ** -1060],
                  [2.0 ** -1000, 3 * 5e-324], [3e-310, 1e-300]])
    B = np.array([[0.3, 0.7, 0.5, 1.5, 2.0 ** 600], [0.25, -0.25, 2.0 ** -30, 1.0, 2.0 ** -600]])
    C, info = ozaki.dgemm(A, B, bounds=True)
    assert info.uncertified == info.fallback_entries == info.exact_entries == 20
    assert info.fallback == "exact" and info.fallback_block == (4, 5)
    assert info.max_bound_ratio == np.inf
    np.testing.assert_array_equal(bits(C), bits(exact_matmul(A, B)))
    kept, info0 = ozaki.dgemm(A, B, fallback="none", bounds=True)
    assert info0.uncertified == 20 and info0.fallback == "none" and info0.exact_entries == 0
    assert np.isinf(info0.error_bound).all()  # Dot2's values, without a bound
    with pytest.raises(ozaki.core.certify.CertificationError, match="20 entries of a small "
                       "product cannot be certified .* the first is C\\[0, 0\\]"):
        ozaki.dgemm(A, B, fallback="raise")
    S = np.stack([np.ones((4, 2)), A])  # a stack: the slice is named
    with pytest.raises(ozaki.core.certify.CertificationError, match="the first is C\\[1, 0, 0\\]"):
        ozaki.matmul(S, B, fallback="raise")


def test_near_overflow_is_finite_where_the_exact_result_is():
    A = np.array([[1.0, -2.0, 1e308]])
    B = np.array([[0.0], [1e308], [3.5]])
    C, info = ozaki.dgemm(A, B, return_info=True)
    assert C[0, 0] == 1.5e308 and info.exact_entries == 1
    assert np.isposinf(ozaki.dgemm(np.array([[1e308, 1e308]]), np.ones((2, 1))))[0, 0]


def test_non_finite_values_follow_the_emulated_paths_semantics(rng):
    A = rng.standard_normal((6, 5))
    B = rng.standard_normal((5, 7))
    A[1, 2], A[4, 0] = np.inf, np.nan
    B[3, 1], B[0, 5] = -np.inf, 0.0
    A[2, 0] = 0.0
    B[0, 4] = np.inf  # with A[2, 0] = 0: inf * 0
    C, info = ozaki.dgemm(A, B, bounds=True)
    want = ozaki.dgemm(A, B, num_moduli=6)  # the emulated path, same semantics
    special = ~np.isfinite(want)
    assert special.any() and np.array_equal(np.isnan(C), np.isnan(want))
    assert np.array_equal(C[special & ~np.isnan(want)], want[special & ~np.isnan(want)])
    assert (info.error_bound[special] == 0).all()
    rows, cols = np.isfinite(A).all(axis=1), np.isfinite(B).all(axis=0)
    check_contract(A[rows], B[:, cols], C[np.ix_(rows, cols)])


def test_zero_results_are_positive_zero():
    A = np.array([[1.0, -1.0, 0.0], [-0.0, -0.0, -0.0]])
    C = ozaki.dgemm(A, np.array([[2.0], [2.0], [-5.0]]))
    assert (C == 0).all() and not np.signbit(C).any()


@pytest.mark.parametrize("threads", [2, 3])
def test_bits_do_not_depend_on_the_thread_count(threads, rng):
    A = rng.standard_normal((90, 120)) * np.exp2(rng.integers(-30, 30, (90, 1)))
    B = rng.standard_normal((120, 70))
    assert 90 * 120 * 70 >= 2 ** 16  # the cpu backend's threads serve it
    with parallel.limit(1):
        one = ozaki.dgemm(A, B)
    with parallel.limit(threads):
        np.testing.assert_array_equal(bits(ozaki.dgemm(A, B)), bits(one))


def test_stacks_broadcasting_and_layouts_equal_the_2d_products(rng):
    A = rng.standard_normal((4, 3, 9, 11))
    B = rng.standard_normal((3, 11, 5))
    C, info = ozaki.matmul(A, B, return_info=True)
    assert info.path == "compensated"
    for idx in np.ndindex(4, 3):
        np.testing.assert_array_equal(bits(C[idx]), bits(ozaki.dgemm(A[idx], B[idx[1]])))
    F = np.asfortranarray(A[0, 0])
    np.testing.assert_array_equal(bits(ozaki.dgemm(F, np.asfortranarray(B[0]))),
                                  bits(C[0, 0]))


def test_complex_products_meet_the_contract_per_part(rng):
    A = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    B = rng.standard_normal((6, 3)) + 1j * rng.standard_normal((6, 3))
    Z, info = ozaki.zgemm(A, B, bounds=True)
    assert info.path == "compensated" and Z.dtype == np.complex128
    Ae = np.concatenate([A.real, A.imag], axis=1)  # the real embedding: [Re | Im]
    Be = np.block([[B.real, B.imag], [-B.imag, B.real]])
    flat = np.concatenate([Z.real, Z.imag], axis=1)
    bound = np.concatenate([info.error_bound.real, info.error_bound.imag], axis=1)
    check_contract(Ae, Be, flat, bound)
    np.testing.assert_array_equal(bits(ozaki.matmul(A, B)), bits(Z))
    np.testing.assert_array_equal(bits(ozaki.gemm(A, B)), bits(Z))


def test_modes_and_schemes_give_the_same_bits(rng):
    A, B = rng.standard_normal((7, 8)), rng.standard_normal((8, 9))
    ref = ozaki.dgemm(A, B)
    for kw in (dict(mode="fast"), dict(scheme="int8"), dict(scheme="fp8", engine="cpu-fp8")):
        C, info = ozaki.dgemm(A, B, return_info=True, **kw)
        assert info.path == "compensated"
        np.testing.assert_array_equal(bits(C), bits(ref))


def test_the_rule_reads_shape_and_options_only(rng, monkeypatch):
    opts = ozaki.api.calls.options("auto", "auto", "accurate", "auto", None, False)
    explicit = ozaki.api.calls.options("auto", 6, "accurate", "auto", None, False)
    W = compensated.SMALL_WORK
    assert compensated.applies(opts, False, 256, 256, 256, REAL) == (256 ** 3 <= W)
    assert compensated.applies(opts, False, 1, W, 1, REAL)
    assert not compensated.applies(opts, False, 1, W + 1, 1, REAL)
    assert not compensated.applies(opts, False, 1, W // 4 + 1, 1, COMPLEX)  # 4 m n k
    assert not compensated.applies(explicit, False, 8, 8, 8, REAL)
    assert not compensated.applies(opts, True, 8, 8, 8, REAL)
    assert not compensated.applies(opts, False, 8, 0, 8, REAL)
    # the wiring: a product at the limit takes the path, one term more the emulation
    monkeypatch.setattr(compensated, "SMALL_WORK", 4 * 5 * 6)
    A, B = rng.standard_normal((4, 5)), rng.standard_normal((5, 6))
    assert ozaki.dgemm(A, B, return_info=True)[1].path == "compensated"
    A7 = rng.standard_normal((4, 7))
    assert ozaki.dgemm(A7, rng.standard_normal((7, 6)), return_info=True)[1].path == "emulated"
    assert ozaki.dgemm(A, B, num_moduli=8, return_info=True)[1].path == "emulated"
    assert ozaki.dgemm(ozaki.prepare(A), B, return_info=True)[1].path == "emulated"


def test_inputs_are_not_modified(rng):
    A, B = rng.standard_normal((5, 6)), rng.standard_normal((6, 4))
    A0, B0 = A.copy(), B.copy()
    ozaki.dgemm(A, B, bounds=True)
    assert np.array_equal(A, A0) and np.array_equal(B, B0)

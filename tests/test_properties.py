"""Hypothesis properties: exact integer products, power-of-two scaling, special values."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra.numpy import arrays

import ozaki
from validation.reference import fraction_matmul

SCHEMES = ["int8", "fp8", "fp64", "int7"]
MODES = ["accurate", "fast"]


@st.composite
def int_pair(draw, max_k=24, bits=12):
    m, k, n = draw(st.integers(1, 6)), draw(st.integers(1, max_k)), draw(st.integers(1, 6))
    el = st.integers(-2 ** bits, 2 ** bits).map(float)
    A = draw(arrays(np.float64, (m, k), elements=el))
    B = draw(arrays(np.float64, (k, n), elements=el))
    return A, B


@pytest.mark.slow
@given(int_pair(), st.sampled_from(SCHEMES), st.sampled_from(MODES))
def test_small_integers_give_the_exact_product(pair, scheme, mode):
    A, B = pair
    # |entries| <= 2**12, k <= 24: products below 2**29, every default count holds them
    C = ozaki.dgemm(A, B, scheme=scheme, mode=mode)
    assert np.array_equal(C, A @ B)


@st.composite
def float_pair(draw):
    m, k, n = draw(st.integers(1, 5)), draw(st.integers(1, 30)), draw(st.integers(1, 5))
    el = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
    return (draw(arrays(np.float64, (m, k), elements=el)),
            draw(arrays(np.float64, (k, n), elements=el)))


@given(float_pair(), st.integers(-300, 300), st.integers(-300, 300),
       st.sampled_from(SCHEMES), st.sampled_from(MODES))
def test_power_of_two_scaling_is_bitwise(pair, ea, eb, scheme, mode):
    A, B = pair
    A2, B2 = np.ldexp(A, ea), np.ldexp(B, eb)
    # the inputs themselves must scale exactly (no underflow into subnormals)
    assume(np.array_equal(np.ldexp(A2, -ea), A) and np.array_equal(np.ldexp(B2, -eb), B))
    C = ozaki.dgemm(A, B, scheme=scheme, mode=mode, num_moduli=8)
    C2 = ozaki.dgemm(A2, B2, scheme=scheme, mode=mode, num_moduli=8)
    want = np.ldexp(C, ea + eb)
    # both results normal: a subnormal one is rounded to fewer bits, so the scaled
    # pair may differ in the last bits of the subnormal one (0 included)
    normal = lambda X: np.isfinite(X) & (np.abs(X) >= 2.0 ** -1022)  # noqa: E731
    both = normal(C) & normal(want)
    assert np.array_equal(C2[both], want[both])


special = st.sampled_from([0.0, -0.0, 1.0, -2.5, 3.0, np.inf, -np.inf, np.nan])


def exact_semantics(A, B):
    """Exact arithmetic with IEEE specials: an infinite product is one with an
    infinite operand (a finite product never overflows in exact arithmetic)."""
    m, k = A.shape
    n = B.shape[1]
    out = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            a, b = A[i], B[:, j]
            if np.isnan(a).any() or np.isnan(b).any():
                out[i, j] = np.nan
                continue
            inf_terms = [a[l] * b[l] for l in range(k) if np.isinf(a[l]) or np.isinf(b[l])]
            if any(np.isnan(t) for t in inf_terms) or (np.inf in inf_terms and -np.inf in inf_terms):
                out[i, j] = np.nan
            elif inf_terms:
                out[i, j] = inf_terms[0]
            else:
                out[i, j] = float(sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)))
    return out


@given(arrays(np.float64, (3, 4), elements=special), arrays(np.float64, (4, 2), elements=special),
       st.sampled_from(SCHEMES), st.sampled_from(MODES))
def test_special_values_follow_exact_arithmetic(A, B, scheme, mode):
    with np.errstate(all="ignore"):
        want = exact_semantics(A, B)
    C = ozaki.dgemm(A, B, mode=mode, scheme=scheme)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(C), nan)
    assert np.array_equal(C[~nan], want[~nan])


def test_exactly_representable_sum_near_overflow():
    A = np.array([[1e308, 1e308, -1e308]])
    for scheme in SCHEMES:
        for mode in MODES:
            assert ozaki.dgemm(A, np.ones((3, 1)), scheme=scheme, mode=mode)[0, 0] == 1e308


def test_exact_overflow_gives_inf_and_zero_rows_give_zeros():
    A = np.array([[1e308, 1e308], [0.0, 0.0], [-1e300, -1e300]])
    C = ozaki.dgemm(A, np.array([[1.0], [1.0]]))
    assert C[0, 0] == np.inf and C[1, 0] == 0.0 and not np.signbit(C[1, 0])
    assert ozaki.dgemm(A[2:], np.full((2, 1), 1e300))[0, 0] == -np.inf


@pytest.mark.parametrize("mode", MODES)
def test_subnormal_inputs_are_exact(mode):
    tiny = 5e-324
    A = np.array([[3 * tiny, -7 * tiny, 2.0 ** -1030]])
    B = np.array([[2.0 ** 600], [2.0 ** 600], [1.0]])
    C = ozaki.dgemm(A, B, mode=mode)
    want = float(fraction_matmul(A, B)[0][0])
    assert C[0, 0] == want and math.isfinite(want)


@pytest.mark.parametrize("m,k,n", [(3, 0, 2), (0, 4, 2), (3, 4, 0), (0, 0, 0)])
def test_empty_and_k0(m, k, n):
    C = ozaki.dgemm(np.ones((m, k)), np.ones((k, n)))
    assert C.shape == (m, n) and C.dtype == np.float64 and np.all(C == 0)

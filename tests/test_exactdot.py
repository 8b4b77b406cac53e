"""Exactly rounded dot products (ozaki.backends.cpu.exactdot), checked against exact rationals."""

import math
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ozaki.backends.cpu import exactdot, parallel
from ozaki.backends.cpu.exactdot import CARRY_PERIOD, dot_rows_cols, exact_block, exact_matmul

finite = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)
TINY = 5e-324  # 2**-1074
MAXD = sys.float_info.max


def round_fraction(s):
    """Correctly rounded (nearest, ties to even) double of the rational ``s``, +-inf on overflow."""
    try:
        return float(s)  # int / int true division: correctly rounded, gradual underflow
    except OverflowError:
        return math.inf if s > 0 else -math.inf


def ref_dot(x, y):
    """Exact sum of the finite products, rounded once (non-finite factors count as 0)."""
    s = Fraction(0)
    for a, b in zip(x, y):
        a, b = float(a), float(b)
        if math.isfinite(a) and math.isfinite(b):
            s += Fraction(a) * Fraction(b)
    return round_fraction(s)


def bits(v):
    return np.asarray(v, dtype=np.float64).view(np.int64)


def assert_same(got, want):
    """Bitwise equality (distinguishes -0.0 from +0.0)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    bad = bits(got) != bits(want)
    assert not bad.any(), f"{got[bad][:5]} != {want[bad][:5]}"


def dot(x, y, **kw):
    x = np.asarray(x, dtype=np.float64).reshape(1, -1)
    y = np.asarray(y, dtype=np.float64).reshape(1, -1)
    return dot_rows_cols(x, y, [0], [0], **kw)[0]


def ref_matmul(A, B):
    m, n = A.shape[0], B.shape[1]
    return np.array([[ref_dot(A[i], B[:, j]) for j in range(n)] for i in range(m)]).reshape(m, n)


# --- the examples that native BLAS gets wrong --------------------------------------------

def test_intermediate_overflow_examples():
    assert_same(dot([1.0, -2.0, 1e308], [0.0, 1e308, 3.5]), 1.5e308)
    assert_same(dot([2.0 ** 1000, 2.0 ** 600, -2.0 ** 600],
                    [2.0 ** -1000, 2.0 ** 600, 2.0 ** 600]), 1.0)
    # above 2**1024 in the middle, back in range at the end, in either order
    assert_same(dot([MAXD, MAXD, -MAXD], [2.0, 2.0, 3.0]), MAXD)
    assert_same(dot([-MAXD, MAXD, MAXD], [3.0, 2.0, 2.0]), MAXD)
    assert_same(dot([1e300, -1e300, 1.0], [1e300, 1e300, 1e-300]), 1e-300)


def test_borrow_through_all_limbs():
    # 2**1000 - 2**-2148: the lowest product bit borrows through every limb; rounds up
    assert_same(dot([2.0 ** 500, -TINY], [2.0 ** 500, TINY]), 2.0 ** 1000)
    # 2**-2148 - 2**1000: the same magnitude, negative
    assert_same(dot([-(2.0 ** 500), TINY], [2.0 ** 500, TINY]), -(2.0 ** 1000))
    # largest and smallest product together, exactly cancelling the largest
    big = 2.0 ** 971
    assert_same(dot([big, TINY, -big], [big, TINY, big]), 0.0)


# --- data classes against Fraction --------------------------------------------------------

def test_random_normal(rng):
    A = rng.standard_normal((7, 60))
    B = rng.standard_normal((60, 5))
    C = exact_matmul(A, B)
    assert_same(C, ref_matmul(A, B))
    assert np.allclose(C, A @ B, rtol=1e-12, atol=1e-12)


def test_wide_exponent_spread(rng):
    k = 80
    A = np.ldexp(rng.choice([-1.0, 1.0], (5, k)) * rng.uniform(1, 2, (5, k)),
                 rng.integers(-1074, 1024, (5, k)))
    B = np.ldexp(rng.choice([-1.0, 1.0], (k, 4)), rng.integers(-1074, 1024, (k, 4)))
    assert np.isfinite(A).all() and np.isfinite(B).all()
    assert_same(exact_matmul(A, B), ref_matmul(A, B))


def test_moderate_spread_results_in_every_range(rng):
    """Exponents chosen so that sums land in the subnormal, normal and overflow ranges."""
    k = 30
    for lo, hi in [(-1074, -1000), (-560, -500), (-20, 20), (490, 515), (900, 1023)]:
        x = np.ldexp(rng.standard_normal((6, k)), rng.integers(lo, hi, (6, k)))
        y = np.ldexp(rng.standard_normal((k, 3)), rng.integers(lo, hi, (k, 3)))
        assert_same(exact_matmul(x, y), ref_matmul(x, y))


def test_heavy_cancellation(rng):
    k = 200
    x = rng.standard_normal(k) * np.ldexp(1.0, rng.integers(-300, 300, k))
    y = rng.standard_normal(k) * np.ldexp(1.0, rng.integers(-300, 300, k))
    tiny_x, tiny_y = 3.0 * 2.0 ** -700, 1.0 + 2.0 ** -40
    xs = np.concatenate([x, -x, [tiny_x]])
    ys = np.concatenate([y, y, [tiny_y]])
    perm = rng.permutation(xs.size)
    want = float(Fraction(tiny_x) * Fraction(tiny_y))
    assert_same(dot(xs[perm], ys[perm]), want)
    # without the tiny term the sum is an exact zero: +0.0
    assert_same(dot(np.concatenate([x, -x]), np.concatenate([y, y])), 0.0)
    # naive float summation loses the tiny term here
    assert np.dot(xs[perm], ys[perm]) != want


def test_subnormal_inputs_and_results():
    assert_same(dot([TINY], [0.3]), 0.0)        # 0.3 * 2**-1074 -> 0
    assert_same(dot([TINY], [0.7]), TINY)       # 0.7 * 2**-1074 -> 2**-1074
    assert_same(dot([-TINY], [0.3]), -0.0)      # nonzero negative sum keeps its sign
    assert_same(dot([TINY], [0.5]), 0.0)        # tie -> even (0)
    assert_same(dot([TINY], [1.5]), 2 * TINY)   # tie between 1 and 2 ulps -> 2
    assert_same(dot([TINY], [2.5]), 2 * TINY)   # tie between 2 and 3 ulps -> 2
    assert_same(dot([3 * TINY], [0.5]), 2 * TINY)  # 1.5 ulps -> 2
    assert_same(dot([TINY], [0.5 + 2.0 ** -30]), TINY)  # just above the tie
    assert_same(dot([TINY, TINY], [0.5, 2.0 ** -1074]), TINY)  # sticky bit 2**-2148
    assert_same(dot([2.0 ** -600], [2.0 ** -600]), 0.0)
    # subnormal times large: exact normal result
    assert_same(dot([TINY], [2.0 ** 1000]), 2.0 ** -74)
    assert_same(dot([3 * TINY, 7 * TINY], [2.0 ** 52, -(2.0 ** 52)]), -(2.0 ** -1020))


def test_ties_at_subnormal_normal_boundary():
    big_sub = (2 ** 52 - 1) * TINY  # largest subnormal, odd significand
    min_norm = 2.0 ** -1022
    assert_same(dot([big_sub, TINY], [1.0, 0.5]), min_norm)  # tie -> even: up to 2**-1022
    assert_same(dot([big_sub, TINY, -TINY], [1.0, 0.5, TINY]), big_sub)  # just below the tie
    assert_same(dot([min_norm, TINY], [1.0, 0.5]), min_norm)  # tie, even -> stays
    assert_same(dot([min_norm, TINY], [1.0, 0.75]), min_norm + TINY)
    assert_same(dot([min_norm, -TINY], [1.0, 0.5]), min_norm)  # ulp below is 2**-1074: tie
    assert_same(dot([min_norm, -TINY], [1.0, 0.75]), big_sub)


def test_ties_to_even_normal():
    e = 2.0 ** -53
    assert_same(dot([1.0, e], [1.0, 1.0]), 1.0)                      # tie, even -> down
    assert_same(dot([1.0, 2.0 ** -52, e], [1.0, 1.0, 1.0]), 1.0 + 2.0 ** -51)  # tie, odd -> up
    assert_same(dot([1.0, e, TINY], [1.0, 1.0, 1.0]), 1.0 + 2.0 ** -52)  # sticky far below
    assert_same(dot([1.0, e, -TINY], [1.0, 1.0, TINY]), 1.0)          # just below the tie
    assert_same(dot([-1.0, -e, -TINY], [1.0, 1.0, TINY]), -(1.0 + 2.0 ** -52))
    # the ulp below a power of two is half as large: 1 - 2**-54 is a tie between 1 - 2**-53 and 1
    assert_same(dot([1.0, -(2.0 ** -54)], [1.0, 1.0]), 1.0)
    assert_same(dot([1.0, -(2.0 ** -54), -TINY], [1.0, 1.0, TINY]), 1.0 - 2.0 ** -53)


def test_overflow():
    half_ulp = 2.0 ** 970  # half an ulp of MAXD
    assert_same(dot([MAXD, half_ulp], [1.0, 1.0]), math.inf)           # tie, odd -> 2**1024
    assert_same(dot([MAXD, half_ulp, -TINY], [1.0, 1.0, TINY]), MAXD)   # just below the tie
    assert_same(dot([-MAXD, -half_ulp], [1.0, 1.0]), -math.inf)
    assert_same(dot([MAXD, -half_ulp, TINY], [-1.0, 1.0, TINY]), -MAXD)
    assert_same(dot([2.0 ** 1023], [2.0]), math.inf)
    assert_same(dot([1e308, 1e308], [5.0, 5.0]), math.inf)
    assert_same(dot([-1e308], [10.0]), -math.inf)
    assert_same(dot([MAXD, MAXD], [MAXD, -MAXD / 2]), math.inf)
    assert_same(dot([MAXD], [-MAXD]), -math.inf)
    # the reference agrees: 2**1024 - 2**970 (the tie) overflows, just below it does not
    assert round_fraction(Fraction(MAXD) + Fraction(half_ulp)) == math.inf
    assert round_fraction(Fraction(MAXD) + Fraction(half_ulp) - Fraction(TINY) ** 2) == MAXD


def test_exact_zero_is_positive():
    for x, y in [([1.0, -1.0], [1.0, 1.0]), ([-0.0], [1.0]), ([-1.0], [0.0]),
                 ([-0.0, -0.0], [-0.0, 5.0]), ([3.0, -1.5], [-1.0, -2.0]), ([], [])]:
        r = dot(x, y)
        assert r == 0.0 and math.copysign(1.0, r) == 1.0


def test_non_finite_entries_are_ignored():
    x = [math.inf, 1.0, math.nan, -math.inf, 3.0]
    y = [0.0, 2.0, 5.0, 1.0, math.nan]
    assert_same(dot(x, y), 2.0)
    assert_same(dot(y, x), 2.0)
    assert_same(dot([math.inf, -math.inf], [math.inf, math.inf]), 0.0)
    A = np.array([[math.nan, 1.0], [2.0, 3.0]])
    B = np.array([[1.0, math.inf], [4.0, 5.0]])
    assert_same(exact_matmul(A, B), [[4.0, 5.0], [14.0, 15.0]])


def test_k_zero():
    out = dot_rows_cols(np.zeros((2, 0)), np.zeros((3, 0)), [0, 1, 1], [2, 0, 1])
    assert_same(out, np.zeros(3))
    assert_same(exact_matmul(np.zeros((2, 0)), np.zeros((0, 3))), np.zeros((2, 3)))
    assert exact_matmul(np.zeros((0, 4)), np.zeros((4, 3))).shape == (0, 3)
    assert dot_rows_cols(np.ones((2, 3)), np.ones((2, 3)), [], []).shape == (0,)


# --- long sums and the deferred carries ----------------------------------------------------

def grouped_reference(x, y):
    """Exact rounded sum for long vectors drawn from small pools: group equal (x, y) pairs."""
    pairs = np.stack([bits(x), bits(y)], axis=1)
    uniq, counts = np.unique(pairs, axis=0, return_counts=True)
    s = Fraction(0)
    for (a, b), c in zip(uniq.view(np.float64), counts):
        s += int(c) * Fraction(float(a)) * Fraction(float(b))
    return round_fraction(s)


@pytest.mark.slow
def test_two_to_the_21_terms_with_cancellation(rng):
    """2**21 terms of 2**1000 scale: the first 2**20 all positive (limbs grow to ~2**53
    before the periodic normalisation), then their negations except a random-sign tail,
    and one subnormal term."""
    n = 1 << 20
    xpool = np.ldexp(rng.uniform(1, 2, 32), rng.integers(965, 972, 32))
    ypool = np.ldexp(rng.uniform(1, 2, 32), rng.integers(30, 41, 32))
    px, py = rng.integers(0, 32, n), rng.integers(0, 32, n)
    x1, y1 = xpool[px], ypool[py]
    perm = rng.permutation(n)
    x2, y2 = -x1[perm], y1[perm].copy()
    tail = 1000
    x2[:tail] = np.ldexp(rng.choice([-1.0, 1.0], tail) * rng.uniform(1, 2, tail), 965)
    x2[-1], y2[-1] = 3 * TINY, 0.75
    x = np.concatenate([x1, x2])
    y = np.concatenate([y1, y2])
    assert x.size == 1 << 21 and x.size >= 2 * CARRY_PERIOD
    want = grouped_reference(x, y)
    assert math.isfinite(want) and abs(want) > 2.0 ** 990
    assert_same(dot(x, y), want)
    # the sum of the positive half alone (2**20 terms near 2**1000 each) overflows
    assert_same(dot(x1, y1), grouped_reference(x1, y1))
    assert dot(x1, y1) == math.inf


def test_two_to_the_21_terms_exact_cancellation(rng):
    n = 1 << 20
    x1 = np.ldexp(rng.uniform(1, 2, n), 1000)
    y1 = rng.uniform(1, 2, n)
    x = np.concatenate([x1, -x1[::-1], [TINY]])
    y = np.concatenate([y1, y1[::-1], [0.7]])
    assert_same(dot(x, y), TINY)
    x[-1] = -TINY
    assert_same(dot(x, y), -TINY)
    x[-1] = 0.0
    assert_same(dot(x, y), 0.0)


@pytest.mark.parametrize("period", [1, 2, 3, 7, 64, 1000, CARRY_PERIOD])
def test_carry_period_triggered(period, rng):
    k = 2500
    x = np.ldexp(rng.standard_normal(k), rng.integers(-1074, 1000, k))
    y = np.ldexp(rng.standard_normal(k), rng.integers(-1074, 1000, k))
    x[::2] = np.abs(x[::2])  # runs of same-sign terms
    y[::2] = np.abs(y[::2])
    assert_same(dot(x, y, period=period), ref_dot(x, y))
    # exact cancellation through many normalisations
    xs, ys = np.concatenate([x, -x, [1.0]]), np.concatenate([y, y, [2.0 ** -1000]])
    assert_same(dot(xs, ys, period=period), 2.0 ** -1000)


def test_invalid_period():
    with pytest.raises(ValueError):
        dot([1.0], [1.0], period=0)
    with pytest.raises(ValueError):
        dot([1.0], [1.0], period=2 ** 30)


# --- properties ------------------------------------------------------------------------------

@given(st.lists(st.tuples(finite, finite), min_size=0, max_size=40))
def test_property_arbitrary_finite(pairs):
    x = [a for a, _ in pairs]
    y = [b for _, b in pairs]
    assert_same(dot(x, y), ref_dot(x, y))


@given(st.integers(1, 4), st.integers(0, 6), st.integers(1, 4), st.data())
def test_property_matmul(m, k, n, data):
    vals = st.lists(finite, min_size=m * k, max_size=m * k)
    A = np.array(data.draw(vals), dtype=np.float64).reshape(m, k)
    B = np.array(data.draw(st.lists(finite, min_size=k * n, max_size=k * n)),
                 dtype=np.float64).reshape(k, n)
    assert_same(exact_matmul(A, B), ref_matmul(A, B))


@given(st.lists(st.tuples(st.integers(-60, 60), st.integers(-60, 60),
                          st.sampled_from([-1.0, 1.0])), min_size=1, max_size=30),
       st.integers(-1100, 1000))
def test_property_scaled_integers(terms, shift):
    """Integer-valued terms scaled by a common power of two: heavy cancellation and ties."""
    scale = math.ldexp(1.0, max(shift, -1074))
    x = [s * a * scale for a, _, s in terms]
    y = [float(b) for _, b, _ in terms]
    assert_same(dot(x, y), ref_dot(x, y))


def test_permutation_invariance(rng):
    k = 300
    x = np.ldexp(rng.standard_normal(k), rng.integers(-1074, 1023, k))
    y = np.ldexp(rng.standard_normal(k), rng.integers(-1074, 1023, k))
    r = dot(x, y)
    for _ in range(3):
        p = rng.permutation(k)
        assert_same(dot(x[p], y[p]), r)
    assert_same(r, ref_dot(x, y))


# --- threads, layouts, API -------------------------------------------------------------------

def test_bitwise_independent_of_thread_count(rng):
    A = np.ldexp(rng.standard_normal((23, 150)), rng.integers(-600, 500, (23, 150)))
    B = np.ldexp(rng.standard_normal((150, 19)), rng.integers(-600, 500, (150, 19)))
    with parallel.limit(1):
        C1 = exact_matmul(A, B)
    for threads in (2, 3, 7):  # ranges of uneven lengths, more threads than cores
        with parallel.limit(threads):
            assert_same(exact_matmul(A, B), C1)
    i, j = 5, 7
    assert_same(C1[i, j], ref_dot(A[i], B[:, j]))


def test_any_memory_layout(rng):
    A = rng.standard_normal((6, 9))
    B = rng.standard_normal((9, 5))
    want = ref_matmul(A, B)
    assert_same(exact_matmul(np.asfortranarray(A), np.asfortranarray(B)), want)
    big_a = np.zeros((12, 18))
    big_a[::2, ::2] = A
    big_b = np.zeros((18, 10))
    big_b[::2, ::2] = B
    assert_same(exact_matmul(big_a[::2, ::2], big_b[::2, ::2]), want)
    assert_same(exact_matmul(A.astype(np.float32), B.astype(np.float32)),
                ref_matmul(A.astype(np.float32).astype(np.float64),
                           B.astype(np.float32).astype(np.float64)))
    ii = np.array([0, 5, 3, 3])
    jj = np.array([4, 0, 2, 2])
    assert_same(dot_rows_cols(A, np.asfortranarray(B.T), ii, jj), want[ii, jj])


def test_exact_block(rng):
    A = np.ldexp(rng.standard_normal((8, 40)), rng.integers(-100, 100, (8, 40)))
    B = np.ldexp(rng.standard_normal((40, 9)), rng.integers(-100, 100, (40, 9)))
    rows = np.array([6, 1, 3])
    cols = np.array([8, 0, 4, 2])
    mask = rng.random((3, 4)) < 0.5
    mask[0, 1] = True
    mask[1] = False  # a row without selected entries
    C = exact_matmul(A, B)
    got = exact_block(A, B, rows, cols, mask)
    assert_same(got, C[np.ix_(rows, cols)][mask])
    assert_same(got, [ref_dot(A[rows[a]], B[:, cols[b]]) for a, b in zip(*np.nonzero(mask))])
    assert exact_block(A, B, rows, cols, np.zeros((3, 4), bool)).shape == (0,)


def test_input_validation():
    X = np.ones((2, 3))
    with pytest.raises(IndexError):
        dot_rows_cols(X, X, [2], [0])
    with pytest.raises(IndexError):
        dot_rows_cols(X, X, [0], [-1])
    with pytest.raises(ValueError):
        dot_rows_cols(X, np.ones((2, 4)), [0], [0])
    with pytest.raises(ValueError):
        dot_rows_cols(X, X, [0, 1], [0])
    with pytest.raises(TypeError):
        dot_rows_cols(X.astype(np.int64), X, [0], [0])
    with pytest.raises(ValueError):
        exact_matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError):
        exact_block(X, X.T, [0], [0], np.ones((2, 2), bool))
    with pytest.raises(TypeError):
        exact_block(X, X.T, [0], [0], np.ones((1, 1)))


def test_accumulator_geometry():
    """The documented layout: limbs cover positions -2148 .. beyond 2048 + 64 bits."""
    assert 32 * exactdot.NLIMBS - 2148 >= 2048 + 64
    assert CARRY_PERIOD * 2 ** 33 + 2 ** 32 < 2 ** 63

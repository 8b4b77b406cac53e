"""Residues of scaled truncations: both passes against Python integers, and against each other."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ozaki.backends.cpu import residues
from ozaki.core.backend import Operand
from ozaki.backends import get_backend
from ozaki.core.moduli import MODULI
from ozaki.core import scaling
from ozaki.core.scaling import exponents
from test_kernels import sym, trunc_scaled  # the exact references, Python integers

ALL_MODULI = sorted({p for ms in MODULI.values() for p in ms})
finite = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)
BACKEND = get_backend()


def both(X, shift, moduli, outer=0, cols=None):
    """Residue planes of the stack ``X`` by the split and the gather pass (None where split
    does not apply)."""
    op = Operand(X, outer)
    lay = op.layout(shift.shape[0])
    if cols is not None:
        lay = lay[:2] + (cols[1] - cols[0],) if not op.T else (lay[0], cols[1] - cols[0], lay[2])
    out_g = np.empty((len(moduli),) + lay)
    gather = BACKEND.residues(op, shift, moduli, out_g, False, cols)
    E, zero = exponents(BACKEND.line_stats(op)[0])
    sub = shift if cols is None else shift[:, cols[0]:cols[1]]
    Eb, zb = (E, zero) if cols is None else (E[:, cols[0]:cols[1]], zero[:, cols[0]:cols[1]])
    digits = scaling.fits_split(Eb, zb, sub)
    if not digits:
        return gather, None
    split = BACKEND.residues(op, shift, moduli, np.empty((len(moduli),) + lay), digits, cols)
    if digits == 3:  # four digits (the leading one 0) give the same residues
        four = BACKEND.residues(op, shift, moduli, np.empty((len(moduli),) + lay), 4, cols)
        assert np.array_equal(four, split)
    return gather, split


@given(st.lists(finite, min_size=1, max_size=24), st.integers(-1100, 1100),
       st.sampled_from(ALL_MODULI))
def test_residues_of_scaled_truncations(xs, shift, p):
    X = np.array([[xs]])
    # keep the scaled magnitudes within the tables (as the shift choice does)
    top = max((math.frexp(abs(x))[1] for x in xs if x), default=0)
    shift = min(shift, 600 - top)
    gather, split = both(X, np.array([[shift]]), (p,))
    want = [sym(trunc_scaled(x, shift), p) for x in xs]
    assert list(gather[0, 0, 0]) == want
    if top + shift <= scaling.SPLIT_LIMIT:
        assert split is not None and list(split[0, 0, 0]) == want


@given(st.lists(finite.filter(lambda v: v != 0), min_size=1, max_size=12),
       st.integers(0, 40))
def test_split_serves_magnitudes_up_to_its_limit(xs, below):
    # shift the row so that its largest magnitude sits just under 2**(88 - below)
    top = max(math.frexp(abs(x))[1] for x in xs)
    shift = scaling.SPLIT_LIMIT - below - top
    moduli = MODULI["fp64"][:6] + MODULI["int8"][:3]
    gather, split = both(np.array([[xs]]), np.array([[shift]]), moduli)
    assert split is not None
    for q, p in enumerate(moduli):
        want = [sym(trunc_scaled(x, shift), p) for x in xs]
        assert list(split[q, 0, 0]) == want == list(gather[q, 0, 0])


def test_column_shifts_and_nonfinite():
    X = np.array([[[1.5, -2.75, np.inf], [np.nan, 3.0, -0.0]]])
    p = 251
    gather, split = both(X, np.array([[60, 3, 1]]), (p,), outer=1)
    for out in (gather[0, 0], split[0, 0]):
        assert out[0, 0] == sym(trunc_scaled(1.5, 60), p)
        assert out[0, 1] == sym(-22, p)
        assert out[0, 2] == 0 and out[1, 0] == 0 and out[1, 2] == 0
        assert out[1, 1] == sym(24, p)
    assert not (np.signbit(split) & (split == 0)).any()  # the split pass maps -0.0 to +0


def test_shared_operand_takes_each_slice_shifts():
    # one operand (a stack of one) read by three slices, each with its own row shifts
    X = np.array([[[1.5, -2.75], [3.25, 0.5]]])
    p = 233
    shifts = np.array([[0, 1], [4, 2], [60, 7]])
    for out in both(X, shifts, (p,)):
        for g in range(3):
            for i in range(2):
                for j in range(2):
                    assert out[0, g, i, j] == sym(trunc_scaled(X[0, i, j], shifts[g, i]), p)


@pytest.mark.slow
@pytest.mark.parametrize("order", ["C", "F"])
def test_column_blocks_are_blocks_of_the_whole(order):
    rng = np.random.default_rng(3)
    B = rng.standard_normal((2, 9, 700)) * np.logspace(-30, 30, 700)
    if order == "F":  # slices stored transposed: the pass reads B's columns as rows
        B = np.ascontiguousarray(B.transpose(0, 2, 1)).transpose(0, 2, 1)
    assert Operand(B, 1).T == (order == "F")
    E, zero = exponents(BACKEND.line_stats(Operand(B, 1))[0])
    shift = np.where(zero, 0, 60 - E)
    moduli = MODULI["fp64"][:3]
    whole_g, whole_s = both(B, shift, moduli, outer=1)
    for j0, j1 in [(0, 512), (512, 700), (37, 38)]:
        g, s = both(B, shift, moduli, outer=1, cols=(j0, j1))
        assert np.array_equal(g, whole_g[..., j0:j1])
        assert np.array_equal(s, whole_s[..., j0:j1])
    assert np.array_equal(whole_g, whole_s)


@given(st.integers(-2300, 2200))
def test_split_factors_multiply_to_the_power(s):
    f1, f2 = residues.split_factors(np.array([s]))
    x = 1.0
    with np.errstate(over="ignore", under="ignore"):
        y = (x * f1[0]) * f2[0]
    if -1074 <= s <= 1023:
        assert y == math.ldexp(1.0, s)
    assert f1[0] >= f2[0] or s < 0


def test_split_constants_are_checked_and_shared():
    c = residues.split_constants((251, 2965819))
    assert c.shape == (2, 4) and not c.flags.writeable
    assert c[1, 1] == sym(2 ** 22, 2965819) and c[1, 3] == sym(2 ** 66, 2965819)
    assert residues.split_constants((251, 2965819)) is c
    with pytest.raises(ValueError, match="2\\*\\*22"):
        residues.split_constants((2 ** 22 + 1,))


def test_fits_split_limit():
    E = np.array([[80, 10]])
    zero = np.array([[False, True]])
    assert scaling.fits_split(E, zero, np.array([[8, 500]])) == 4  # zero lines always fit
    assert scaling.fits_split(E, zero, np.array([[9, 0]])) == 0
    # three 22-bit digits hold magnitudes below 2**66, four below 2**88
    assert scaling.fits_split(E, zero, np.array([[-14, 0]])) == 3
    assert scaling.fits_split(E, zero, np.array([[-13, 0]])) == 4


@given(st.lists(finite.filter(lambda v: v != 0), min_size=1, max_size=12),
       st.integers(0, 30))
def test_three_digits_serve_magnitudes_below_2_66(xs, below):
    # the row's largest magnitude just under 2**(66 - below): three digits
    top = max(math.frexp(abs(x))[1] for x in xs)
    shift = 66 - below - top
    moduli = MODULI["fp64"][:6] + MODULI["int8"][:3]
    op = Operand(np.array([[xs]]), 0)
    E, zero = exponents(BACKEND.line_stats(op)[0])
    assert scaling.fits_split(E, zero, np.array([[shift]])) == 3
    gather, split = both(np.array([[xs]]), np.array([[shift]]), moduli)
    assert np.array_equal(gather, split)
    for q, p in enumerate(moduli):
        assert list(split[q, 0, 0]) == [sym(trunc_scaled(x, shift), p) for x in xs]

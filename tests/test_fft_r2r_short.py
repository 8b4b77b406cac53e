"""The real-to-real transforms at short lengths: one emulated product with the transform's
double-double matrix (``reduction(t, N) == "direct"``, :mod:`fft.realtransforms`).

The claim tested: each output is a nearest double of the exact normalised transform (up to
the stated ``2**-100``-relative terms), hence never farther from it than scipy.fft's
float64 output; the bits do not depend on the batch; the threshold is where the module
says, and the transforms on both sides of it stay below scipy's error.
"""

import math

import mpmath
import numpy as np
import pytest
import scipy.fft as sf
from hypothesis import example, given, strategies as st

import fft
from fft import direct, realtransforms, tables
from fft.reduced import MAX_DIRECT, MAX_DIRECT_ODD_IV, reduction

ONE_D = ["dct", "idct", "dst", "idst"]
TYPES = [1, 2, 3, 4]
NORMS = ["backward", "ortho", "forward"]
INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def _kind(name):
    return name.lstrip("i")[:3]


def _line_type(name, t):
    return INVERSE_TYPE[t] if name.startswith("i") else t


def exact_matrix(name, t, N, norm, orthogonalize):
    """scipy's normalised matrix in mpmath (200 bits), from its definitions: rows are
    outputs. Shares nothing with fft.tables (mpmath's cospi/sinpi of exact rationals)."""
    k, tt, inv = _kind(name), _line_type(name, t), name.startswith("i")
    ortho = norm == "ortho" if orthogonalize is None else orthogonalize
    with mpmath.workprec(200):
        if tt == 1:
            q = N - 1 if k == "dct" else N + 1
            p = (lambda j, n: j * n) if k == "dct" else (lambda j, n: (j + 1) * (n + 1))
        elif tt == 2:
            q, p = 2 * N, (lambda j, n: (j + (k == "dst")) * (2 * n + 1))
        elif tt == 3:
            q, p = 2 * N, (lambda j, n: (2 * j + 1) * (n + (k == "dst")))
        else:
            q, p = 4 * N, (lambda j, n: (2 * j + 1) * (2 * n + 1))
        trig = mpmath.cospi if k == "dct" else mpmath.sinpi
        ends_in = {("dct", 1): {0, N - 1}, ("dct", 3): {0},
                   ("dst", 3): {N - 1}}.get((k, tt), set())
        ends_out = {("dct", 1): {0, N - 1}, ("dct", 2): {0},
                    ("dst", 2): {N - 1}}.get((k, tt), set())
        L = 2 * q if tt == 1 else 2 * N
        scale = {"backward": inv, "forward": not inv}.get(norm)
        f = 1 / mpmath.sqrt(L) if scale is None else (mpmath.mpf(1) / L if scale else 1)
        r2 = mpmath.sqrt(2)
        C = [[0] * N for _ in range(N)]
        for j in range(N):
            for n in range(N):
                w = (1 if n in ends_in else 2) * (r2 if ortho and n in ends_in else 1)
                h = 1 / r2 if ortho and j in ends_out else 1
                C[j][n] = f * h * w * trig(mpmath.mpf(p(j, n)) / q)
        return C


def long_double_errors(name, x, **kw):
    """(ours, scipy's) relative L2 and max errors against scipy.fft in long double."""
    ref = getattr(sf, name)(x.astype(np.longdouble), **kw)
    out = []
    for y in (getattr(fft, name)(x, **kw), getattr(sf, name)(x, **kw)):
        d = np.abs(y.astype(np.longdouble) - ref)
        out.append((float(np.sqrt(np.sum(d * d) / np.sum(ref * ref))),
                    float(d.max() / np.abs(ref).max())))
    return out


def _cases():
    for name in ONE_D:
        for t in TYPES:
            for norm in NORMS:
                for orth in (None, norm != "ortho"):
                    yield name, t, norm, orth


# --- every output is a nearest double of the exact transform ------------------------------

def farther_than_nearest(C, x, y, other=None):
    """The outputs ``(b, j)`` of ``y`` that miss the bound ``|y - exact| <= ulp/2 + 2**-100
    sum_n |C_jn x_n| + 2**-120 ||C_j||_1 ||x_b||_inf + 2**-1072`` (the module's; the last
    term: near the subnormals the products' low parts underflow, and such outputs lose
    bits to gradual underflow, as docs/fft.rst says), or that are farther from the exact
    value than ``other`` (scipy's output) by more than those terms."""
    bad = []
    with mpmath.workprec(200):
        for b in range(x.shape[0]):
            top = float(np.max(np.abs(x[b])))
            for j in range(x.shape[1]):
                terms = [C[j][n] * float(x[b, n]) for n in range(x.shape[1])]
                exact = mpmath.fsum(terms)
                slack = (2.0 ** -100 * float(mpmath.fsum(abs(v) for v in terms))
                         + 2.0 ** -120 * top * float(mpmath.fsum(abs(c) for c in C[j]))
                         + 2.0 ** -1072)
                err = abs(y[b, j] - exact)
                if err > math.ulp(float(exact)) / 2 + slack or (
                        other is not None and err > abs(other[b, j] - exact) + slack):
                    bad.append((b, j))
    return bad


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("name", ONE_D)
def test_direct_outputs_are_nearest_doubles_of_the_exact_transform(name, t, rng):
    """Every output within the bound of :func:`farther_than_nearest` (a nearest double of
    the exact normalised transform), on normal input and input spread over ``2**+-40``,
    and so never farther from the exact value than scipy's float64 output, except by the
    bound's tiny terms."""
    for N in sorted({1, 2, 3, 5, 8, 11, MAX_DIRECT[_line_type(name, t)]}):
        if name.endswith("dct") and t == 1 and N < 2:
            continue
        for norm, orth in (("backward", None), ("ortho", None), ("forward", True),
                           ("ortho", False)):
            x = rng.standard_normal((3, N)) * np.exp2(rng.integers(-40, 41, (3, N)) *
                                                      np.array([[0], [0], [1]]))
            ours = getattr(fft, name)(x, type=t, norm=norm, orthogonalize=orth)
            theirs = getattr(sf, name)(x, type=t, norm=norm, orthogonalize=orth)
            C = exact_matrix(name, t, N, norm, orth)
            assert farther_than_nearest(C, x, ours, theirs) == [], (N, norm, orth)


@given(st.sampled_from(ONE_D), st.sampled_from(TYPES), st.sampled_from(NORMS),
       st.lists(st.floats(-1e6, 1e6, allow_subnormal=False), min_size=2, max_size=16),
       st.integers(-60, 60))
@example("dct", 1, "ortho", [0.0, 2.2250738585072014e-308], 0)  # subnormal outputs
def test_property_nearest_double(name, t, norm, values, spread):
    """For any line of finite doubles, a wide one included (the first value scaled by
    ``2**spread``), every direct output is a nearest double of the exact transform."""
    x = np.array([values])
    x[0, 0] *= 2.0 ** spread
    N = x.shape[1]
    if N > MAX_DIRECT[_line_type(name, t)]:
        x = x[:, :MAX_DIRECT[_line_type(name, t)]]
        N = x.shape[1]
    y = getattr(fft, name)(x, type=t, norm=norm)
    assert farther_than_nearest(exact_matrix(name, t, N, norm, None), x, y) == []


def test_the_check_sees_rounded_entries(monkeypatch, rng):
    """With the matrix's low parts dropped (the product of the correctly rounded entries
    alone, rounded once) some outputs miss the nearest-double bound: the check can fail,
    and the double-double entries are what meet it."""
    good = tables.r2r_matrix_dd

    def rounded(kind, t, N, scaling, ortho):
        C = good(kind, t, N, scaling, ortho).copy()
        C[N:] = 0.0
        return C
    monkeypatch.setattr(tables, "r2r_matrix_dd", rounded)
    direct.prepared_matrix.cache_clear()
    try:
        x = rng.standard_normal((4, 12))
        y = fft.dct(x, type=3, norm="ortho")
        assert farther_than_nearest(exact_matrix("dct", 3, 12, "ortho", None), x, y)
    finally:
        direct.prepared_matrix.cache_clear()


def test_odd_type_iv_is_direct_up_to_127(rng):
    """Odd type IV is not reduced: up to 127 it is direct, its outputs nearest doubles."""
    for name, N, norm in [("dct", 33, "ortho"), ("idct", 33, "forward"), ("dst", 33, None),
                          ("idst", 127, "ortho")]:
        x = rng.standard_normal((2, N))
        with fft.stage_records() as stages:
            y = getattr(fft, name)(x, type=4, norm=norm)
        assert [s.form for s in stages] == ["direct"]
        C = exact_matrix(name, 4, N, norm or "backward", None)
        assert farther_than_nearest(C, x, y, getattr(sf, name)(x, type=4, norm=norm)) == []


# --- below scipy's error from N = 1 to 20, both sides of the threshold -----------------------

@pytest.mark.parametrize("name,t,norm,orth", list(_cases()))
def test_at_most_scipys_error_for_every_length_up_to_20(name, t, norm, orth):
    """Relative L2 and max errors against scipy.fft in long double, on 8 lines of standard
    normal input, every length 1-20. Direct (up to the threshold): both at most scipy's
    own float64 errors (every output is a nearest double). The FFT reductions beyond it
    (17-20): the L2 error at most scipy's (measured 0.45-0.85 of it), the largest below
    the FFT bound ``2 u sqrt(log2 8N)`` (measured up to 2.3 u; scipy's up to 2 u: the
    largest of 8N outputs is noise at this level)."""
    rng = np.random.default_rng([TYPES.index(t), NORMS.index(norm), ONE_D.index(name),
                                 orth is None])
    for N in range(1, 21):
        if name.endswith("dct") and t == 1 and N < 2:
            continue
        x = rng.standard_normal((8, N))
        (o2, omax), (s2, smax) = long_double_errors(name, x, type=t, norm=norm,
                                                     orthogonalize=orth)
        assert o2 <= s2, (N, o2, s2)
        if reduction(_line_type(name, t), N) == "direct":
            assert omax <= smax and o2 <= 2.0 ** -53, (N, omax, smax, o2)
        else:
            assert omax <= 2 * 2.0 ** -53 * math.sqrt(math.log2(8 * N)), (N, omax, smax)


def test_the_threshold_on_both_sides():
    assert MAX_DIRECT == {1: 48, 2: 16, 3: 16, 4: 15} and MAX_DIRECT_ODD_IV == 127
    for t in TYPES:
        top = MAX_DIRECT[t]
        assert all(reduction(t, N) == "direct" for N in range(1, top + 1))
        assert reduction(t, top + 1) == {1: "mirror", 2: "makhoul", 3: "makhoul", 4: "half"}[t]
    assert [reduction(4, N) for N in (17, 18, 127, 128, 129)] == \
        ["direct", "half", "direct", "half", "mirror"]
    x = np.random.default_rng(5).standard_normal((4, 49))
    for t in TYPES:
        for N, form in ((MAX_DIRECT[t], "direct"), (MAX_DIRECT[t] + 1, None)):
            with fft.stage_records() as stages:
                y = fft.dst(x[:, :N], type=t)
            forms = {s.form for s in stages}
            assert (forms == {"direct"}) if form else ("direct" not in forms and forms), t
            # one product: its count, and the GEMMs of one emulated product
            if form:
                assert len(stages) == 1 and stages[0].radix == N and stages[0].columns == 4
                assert stages[0].num_moduli == 13 and stages[0].gemms > 0
            ref = sf.dst(x[:, :N].astype(np.longdouble), type=t)
            assert np.max(np.abs(y - ref)) <= 2 * 2.0 ** -53 * np.max(np.abs(ref))


# --- bits do not depend on the batch ----------------------------------------------------------

@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("name", ONE_D)
def test_direct_bits_do_not_depend_on_the_batch(name, t, rng):
    f = getattr(fft, name)
    for N in (1, 4, 7, MAX_DIRECT[_line_type(name, t)]):
        if name.endswith("dct") and t == 1 and N < 2:
            continue
        x = rng.standard_normal((6, N))
        x[2] *= 2.0 ** 600  # other lines of other magnitudes, a zero line, a NaN line
        x[3] = 0.0
        Y = f(x, type=t, norm="ortho")
        for i in range(len(x)):
            assert np.array_equal(Y[i], f(x[i], type=t, norm="ortho")), (N, i)
        assert np.array_equal(f(np.ascontiguousarray(x.T), type=t, axis=0, norm="ortho"), Y.T)
        assert np.array_equal(f(np.asfortranarray(x), type=t, norm="ortho", workers=1), Y)
        big = np.concatenate([x, rng.standard_normal((200, N)) * 1e-200, np.full((1, N), np.nan)])
        got = f(big, type=t, norm="ortho")
        assert np.array_equal(got[:6], Y) and np.all(np.isnan(got[-1]))
        nd = getattr(fft, name + "n")(np.stack([x[::-1], x]), type=t, axes=(-1,), norm="ortho")
        assert np.array_equal(nd[1], Y)


def test_scaling_by_powers_of_two_keeps_the_bits(rng):
    x = rng.standard_normal((3, 9))
    for name in ONE_D:
        for t in TYPES:
            y = getattr(fft, name)(x, type=t, norm="forward")
            for e in (1000, -900):
                assert np.array_equal(getattr(fft, name)(x * 2.0 ** e, type=t, norm="forward"),
                                      y * 2.0 ** e), (name, t, e)


def test_range_nonfinite_zeros_and_the_input(rng):
    """Near overflow the normalised result is finite where it fits and ``inf`` where the
    exact one overflows (no range scaling needed: the product's own); ``inf``/NaN give
    non-finite outputs where they enter; exact zeros are +0.0; the input is unchanged."""
    x = np.full(6, 5e307)
    got = fft.dct(x, type=2, norm="ortho")  # y[0] = sqrt(6) 5e307 = 1.22e308 fits
    assert np.all(np.isfinite(got))
    ref = sf.dct(x.astype(np.longdouble), type=2, norm="ortho")
    assert np.max(np.abs(got - ref)) <= 2.0 ** -53 * np.max(np.abs(ref))
    assert fft.dct(x, type=2)[0] == np.inf  # 12 x 5e307 overflows
    assert fft.dct(2 * x, type=2, norm="ortho")[0] == np.inf  # 2.45e308 overflows
    y = rng.standard_normal(5)
    y[2] = np.inf
    out = fft.dst(y, type=4)
    assert not np.any(np.isfinite(out))
    y[2] = np.nan
    assert np.all(np.isnan(fft.idct(y, type=3)))
    zero = fft.dctn(np.zeros((3, 4, 5)), type=1)
    assert np.all(zero == 0) and not np.any(np.signbit(zero))
    z = rng.standard_normal((2, 7))
    keep = z.copy()
    fft.idst(z, type=1, norm="ortho", overwrite_x=True)
    assert np.array_equal(z, keep)


# --- the matrix --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["dct", "dst"])
def test_trig_tables_are_correctly_rounded(kind):
    """``hi`` is the correctly rounded ``cos``/``sin`` of scipy's angle and ``hi + lo`` is
    within ``2**-100`` of it (mpmath), for every type and a few lengths."""
    for t in TYPES:
        for N in (2, 5, 16):
            T = tables.r2r_trig_dd(kind, t, N)
            C = exact_matrix(kind, t, N, "backward", False)  # 2 cos/sin, or 1 at the ends
            with mpmath.workprec(200):
                for j in range(N):
                    for n in range(N):
                        w = 1 if (kind, t, n) in {("dct", 1, 0), ("dct", 1, N - 1),
                                                   ("dct", 3, 0), ("dst", 3, N - 1)} else 2
                        v = C[j][n] / w
                        assert T[0, j, n] == float(v)
                        assert abs(mpmath.mpf(T[0, j, n]) + T[1, j, n] - v) <= 2.0 ** -100


def test_sqrt_dd():
    from fractions import Fraction
    assert tables.sqrt_dd(Fraction(1, 4)) == (0.5, 0.0)
    with mpmath.workprec(200):
        for r in (Fraction(2), Fraction(1, 30), Fraction(1, 33 * 33), Fraction(3, 7)):
            hi, lo = tables.sqrt_dd(r)
            exact = mpmath.sqrt(mpmath.mpf(r.numerator) / r.denominator)
            assert hi == float(exact) and abs(hi + mpmath.mpf(lo) - exact) <= 2.0 ** -105 * exact
    with pytest.raises(ValueError, match="positive"):
        tables.sqrt_dd(Fraction(0))
    with pytest.raises(ValueError, match="type 1 needs"):
        tables.r2r_trig_dd("dct", 1, 1)


# --- the native hook (the benchmarks' baseline) -----------------------------------------------

def test_plan_options_run_the_same_transform_on_native_products(rng):
    x = rng.standard_normal((4, 40))
    for N in (7, 17, 40):
        for t in TYPES:
            want = fft.dct(x[:, :N], type=t, norm="ortho")
            with realtransforms.plan_options(native=True), fft.stage_records() as stages:
                got = fft.dct(x[:, :N], type=t, norm="ortho")
            assert stages and all(s.gemms == 0 and s.num_moduli == 0 for s in stages)
            assert np.allclose(got, want, rtol=0, atol=1e-14 * np.max(np.abs(want)))
            assert np.array_equal(fft.dct(x[:, :N], type=t, norm="ortho"), want)  # restored
    with pytest.raises(ValueError):
        with realtransforms.plan_options(mode="bad"):
            pass

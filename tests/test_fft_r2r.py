"""The real-to-real transforms (:mod:`fft.realtransforms`) against scipy.fft and exact sums.

Reference: scipy.fft on long double input (pocketfft in extended precision), as in
tests/test_fft.py, and for tiny lengths the defining sums in mpmath at 200 bits.
"""

import math

import mpmath
import numpy as np
import pytest
import scipy.fft as sf

import fft

U = 2.0 ** -53
ONE_D = ["dct", "idct", "dst", "idst"]
N_D = ["dctn", "idctn", "dstn", "idstn"]
TYPES = [1, 2, 3, 4]
NORMS = [None, "backward", "ortho", "forward"]


def rel_err(y, ref):
    d = np.asarray(y).astype(ref.dtype) - ref
    return float(np.sqrt(np.sum(np.abs(d) ** 2) / np.sum(np.abs(ref) ** 2)))


def errors(name, x, **kw):
    """(ours, scipy's) relative L2 errors against scipy.fft in long double."""
    got = getattr(fft, name)(x, **kw)
    ref = getattr(sf, name)(x.astype(np.longdouble), **kw)
    assert got.shape == ref.shape and got.dtype == np.float64
    return rel_err(got, ref), rel_err(getattr(sf, name)(x, **kw), ref)


def bound(M):
    """``2u sqrt(log2 M)`` for the extension's length ``M`` (the FFT's bound)."""
    return 2 * U * math.sqrt(max(1.0, math.log2(M)))


def extension(kind, t, N):
    return {1: 2 * (N - 1) if kind == "dct" else 2 * (N + 1), 2: 4 * N, 3: 4 * N, 4: 8 * N}[t]


def exact(kind, t, x):
    """scipy's unnormalised definitions, summed in mpmath at 200 bits."""
    N = len(x)
    out = []
    with mpmath.workprec(200):
        xs = [mpmath.mpf(float(v)) for v in x]
        for k in range(N):
            if kind == "dct":
                if t == 1:
                    s = xs[0] + (-1) ** k * xs[-1] + 2 * sum(
                        xs[n] * mpmath.cospi(mpmath.mpf(k * n) / (N - 1)) for n in range(1, N - 1))
                elif t == 2:
                    s = 2 * sum(xs[n] * mpmath.cospi(mpmath.mpf(k * (2 * n + 1)) / (2 * N))
                                for n in range(N))
                elif t == 3:
                    s = xs[0] + 2 * sum(xs[n] * mpmath.cospi(mpmath.mpf(n * (2 * k + 1)) / (2 * N))
                                        for n in range(1, N))
                else:
                    s = 2 * sum(xs[n] * mpmath.cospi(mpmath.mpf((2 * n + 1) * (2 * k + 1)) / (4 * N))
                                for n in range(N))
            else:
                if t == 1:
                    s = 2 * sum(xs[n] * mpmath.sinpi(mpmath.mpf((k + 1) * (n + 1)) / (N + 1))
                                for n in range(N))
                elif t == 2:
                    s = 2 * sum(xs[n] * mpmath.sinpi(mpmath.mpf((k + 1) * (2 * n + 1)) / (2 * N))
                                for n in range(N))
                elif t == 3:
                    s = (-1) ** k * xs[-1] + 2 * sum(
                        xs[n] * mpmath.sinpi(mpmath.mpf((n + 1) * (2 * k + 1)) / (2 * N))
                        for n in range(N - 1))
                else:
                    s = 2 * sum(xs[n] * mpmath.sinpi(mpmath.mpf((2 * n + 1) * (2 * k + 1)) / (4 * N))
                                for n in range(N))
            out.append(s)
    return out


# --- definitions --------------------------------------------------------------------------

@pytest.mark.parametrize("N,t", [(N, t) for N in (1, 2, 3, 4, 7) for t in TYPES]
                         + [(N, t) for N in (17, 18, 20) for t in (2, 3, 4)])  # reduced
@pytest.mark.parametrize("kind", ["dct", "dst"])
def test_definitions_against_exact_sums(kind, t, N, rng):
    """Each output within a few ulps of the exact sum's norm (mpmath, 200 bits), on the
    direct products (short lengths) and the reduced transforms (N >= 17)."""
    if kind == "dct" and t == 1 and N == 1:
        pytest.skip("DCT-I needs two points (tested with the errors)")
    x = rng.standard_normal(N)
    got = getattr(fft, kind)(x, type=t)
    ref = exact(kind, t, x)
    scale = math.sqrt(sum(float(v) ** 2 for v in ref))
    for g, r in zip(got, ref):
        assert abs(g - float(r)) <= 4 * U * scale, (g, r)


@pytest.mark.parametrize("orthogonalize", [None, True, False])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("name", ONE_D)
def test_norms_and_orthogonalize_as_scipy(name, t, norm, orthogonalize, rng):
    for N in (2, 5, 8):
        x = rng.standard_normal((3, N))
        ours, theirs = errors(name, x, type=t, norm=norm, orthogonalize=orthogonalize)
        assert ours <= bound(extension(name.lstrip("i")[:3], t, N)), (N, ours, theirs)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("kind", ["dct", "dst"])
def test_inverses_invert(kind, t, rng):
    x = rng.standard_normal((2, 33))
    inv = getattr(fft, "i" + kind)
    for norm in NORMS:
        back = inv(getattr(fft, kind)(x, type=t, norm=norm), type=t, norm=norm)
        assert np.max(np.abs(back - x)) <= 64 * U * np.max(np.abs(x))
    nd = getattr(fft, kind + "n")(x.reshape(2, 3, 11), type=t, norm="ortho")
    back = getattr(fft, "i" + kind + "n")(nd, type=t, norm="ortho").reshape(2, 33)
    assert np.max(np.abs(back - x)) <= 64 * U * np.max(np.abs(x))


# --- accuracy ------------------------------------------------------------------------------

LENGTHS = [7, 16, 60, 97, 128, 1000, 1009]


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("name", ONE_D)
def test_accuracy_1d(name, t, rng):
    """Below the FFT's bound at the extension's length and below scipy's own float64
    error, at odd, even and prime (1009) lengths; the median ratio to scipy's is <= 0.6."""
    ratios = []
    for N in LENGTHS:
        ours, theirs = errors(name, rng.standard_normal((4, N)), type=t)
        assert ours <= bound(extension(name.lstrip("i")[:3], t, N)), (N, ours, theirs)
        assert ours <= theirs, (N, ours, theirs)
        ratios.append(ours / theirs)
    assert np.median(ratios) <= 0.6, ratios


def test_median_ratio_over_everything(rng):
    """The issue's goal: the median ratio of our error to scipy's is at most 0.7
    (measured: about 0.45 over the eight functions, types 1-4, these lengths, norms)."""
    ratios = []
    for name in ONE_D:
        for t in TYPES:
            for N, norm in [(30, None), (64, "ortho"), (99, "forward"), (256, "backward")]:
                ours, theirs = errors(name, rng.standard_normal((4, N)), type=t, norm=norm)
                ratios.append(ours / theirs)
    for name in N_D:
        for t in TYPES:
            ours, theirs = errors(name, rng.standard_normal((12, 10, 9)), type=t, norm="ortho")
            ratios.append(ours / theirs)
    assert np.median(ratios) <= 0.7, np.median(ratios)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("name", N_D)
def test_accuracy_nd(name, t, norm, rng):
    x = rng.standard_normal((6, 10, 9))
    for kw in ({}, {"axes": (0, 2)}, {"s": (8, 12)}, {"s": (-1, 5), "axes": (2, 0)}):
        ours, theirs = errors(name, x, type=t, norm=norm, **kw)
        assert ours <= 2 * bound(8 * 120), (kw, ours, theirs)
        assert ours <= 1.5 * theirs, (kw, ours, theirs)


@pytest.mark.parametrize("name", ONE_D)
def test_n_crops_and_pads_and_axis(name, rng):
    x = rng.standard_normal((5, 12))
    for t in TYPES:
        for kw in ({"n": 7}, {"n": 20}, {"axis": 0}, {"n": 3, "axis": 0}):
            ours, _ = errors(name, x, type=t, **kw)
            assert ours <= 4 * U, (t, kw, ours)


# --- dtypes, complex input, no axes ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64, np.bool_,
                                   np.complex64, np.complex128])
@pytest.mark.parametrize("name", ONE_D + N_D)
def test_result_dtypes_are_scipy_s(name, dtype, rng):
    x = (rng.standard_normal((3, 6)) * 4).astype(dtype) if dtype != np.bool_ else \
        rng.standard_normal((3, 6)) > 0
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((3, 6)).astype(dtype)
    got, want = getattr(fft, name)(x), getattr(sf, name)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-6 if want.dtype in (np.float32, np.complex64) else 1e-14
    assert np.allclose(got, want, rtol=tol, atol=tol * np.max(np.abs(want)))


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_complex_input_transforms_parts_separately(name, rng):
    z = rng.standard_normal((4, 9)) + 1j * rng.standard_normal((4, 9))
    f = getattr(fft, name)
    for t in TYPES:
        got = f(z, type=t, norm="ortho")
        assert np.array_equal(got.real, f(z.real, type=t, norm="ortho"))
        assert np.array_equal(got.imag, f(z.imag, type=t, norm="ortho"))


def test_single_precision_is_one_rounding_of_the_fp64_result(rng):
    x = rng.standard_normal((3, 50)).astype(np.float32)
    for name in ONE_D:
        assert np.array_equal(getattr(fft, name)(x, type=3),
                              getattr(fft, name)(x.astype(np.float64), type=3).astype(np.float32))


@pytest.mark.parametrize("name", N_D)
def test_no_axes_returns_the_input(name):
    a = np.ones((3, 4), np.float32)
    assert getattr(fft, name)(a, axes=()) is a and getattr(sf, name)(a, axes=()) is a
    assert getattr(fft, name)(a, s=()) is a
    z = np.float64(2.5)
    assert np.array_equal(getattr(fft, name)(z), getattr(sf, name)(z))


# --- errors, as scipy's ----------------------------------------------------------------------

BAD_1D = [{"type": 0}, {"type": 5}, {"type": "2"}, {"type": 2.0}, {"type": None}, {"n": 0},
          {"n": -1}, {"n": 2.0}, {"norm": "bad"}, {"axis": 2}, {"axis": -3}, {"workers": 0},
          {"type": 1, "n": 1}]
BAD_ND = [{"type": 7}, {"s": (2, 3, 4)}, {"axes": (0, 0)}, {"axes": (0, 5)},
          {"s": (2,), "axes": (0, 1)}, {"s": (0, 2)}, {"type": 1, "s": (1, 2)},
          {"norm": "Ortho"}, {"workers": 0}]


def _raised(f, *a, **kw):
    try:
        f(*a, **kw)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return e
    return None


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_errors_are_scipy_s(name):
    x = np.ones((3, 4))
    for kw in BAD_ND if name in N_D else BAD_1D:
        if "dst" in name and kw.get("type") == 1:
            continue  # DST-I of one point is defined (only DCT-I needs two)
        theirs, ours = _raised(getattr(sf, name), x, **kw), _raised(getattr(fft, name), x, **kw)
        if theirs is None:  # scipy's idct/idst take type=2.0 (a dict lookup); fft refuses it
            assert kw == {"type": 2.0} and name in ("idct", "idst") and isinstance(ours, TypeError)
            continue
        assert isinstance(ours, type(theirs)), (kw, ours, theirs)
    assert isinstance(_raised(getattr(fft, name), np.float64(1.0), axis=-1)
                      if name in ONE_D else None, (IndexError, type(None)))


def test_long_double_and_masked_are_refused():
    with pytest.raises(TypeError):
        fft.dct(np.ones(4, np.longdouble))
    with pytest.raises(TypeError):
        fft.dstn(np.ma.array(np.ones(4)))


# --- bits do not depend on the batch ----------------------------------------------------------

@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("name", ONE_D)
def test_bits_do_not_depend_on_the_batch(name, t, rng):
    x = rng.standard_normal((5, 60))
    f = getattr(fft, name)
    Y = f(x, type=t, norm="ortho")
    for i in range(len(x)):
        assert np.array_equal(Y[i], f(x[i], type=t, norm="ortho")), i
    assert np.array_equal(f(np.ascontiguousarray(x.T), type=t, axis=0, norm="ortho"), Y.T)
    assert np.array_equal(f(np.stack([x, 100 * x[::-1]], axis=1), type=t, norm="ortho")[:, 0], Y)
    assert np.array_equal(f(np.asfortranarray(x), type=t, norm="ortho", workers=1), Y)


def test_nd_transforms_are_successive_1d_transforms(rng):
    x = rng.standard_normal((4, 6, 5))
    for kind in ("dct", "dst", "idct", "idst"):
        f, fn = getattr(fft, kind), getattr(fft, kind + "n")
        for t in TYPES:
            want = f(f(f(x, type=t, axis=2), type=t, axis=1), type=t, axis=0)
            assert np.array_equal(fn(x, type=t), want)
            assert np.array_equal(fn(x, type=t, axes=(2, 0)),
                                  f(f(x, type=t, axis=0), type=t, axis=2))


# --- the scipy backend ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ONE_D + N_D)
def test_backend_serves_the_real_to_real_transforms(name, rng):
    x = rng.standard_normal((4, 30))
    for t in TYPES:
        with sf.set_backend(fft.scipy_backend, only=True), fft.stage_records() as stages:
            got = getattr(sf, name)(x, t, norm="ortho")
            one = getattr(sf, name)(x, type=t, norm="forward", orthogonalize=True)
        assert stages, "fft's stages ran"
        assert np.array_equal(got, getattr(fft, name)(x, t, norm="ortho"))
        assert np.array_equal(one, getattr(fft, name)(x, t, norm="forward", orthogonalize=True))
        ref = getattr(sf, name)(x.astype(np.longdouble), t, norm="ortho")
        assert rel_err(got, ref) <= bound(8 * 30)


def test_backend_declines_fht_and_long_double(rng):
    """fht is scipy's (its inner rfft/irfft calls go through the backend, so fft's stages
    run there); long double is scipy's altogether."""
    x = rng.standard_normal(16)
    with sf.set_backend(fft.scipy_backend):
        h = sf.fht(x, dln=0.1, mu=0.5)
        with fft.stage_records() as stages:
            ld = sf.dct(x.astype(np.longdouble))
    assert not stages
    assert np.allclose(h, sf.fht(x, dln=0.1, mu=0.5), rtol=1e-13, atol=1e-13)
    assert ld.dtype == np.longdouble and np.array_equal(ld, sf.dct(x.astype(np.longdouble)))
    with sf.set_backend(fft.scipy_backend, only=True):
        with pytest.raises(NotImplementedError):
            sf.fht(x, dln=0.1, mu=0.5)
        with pytest.raises(NotImplementedError):
            sf.ifht(x, dln=0.1, mu=0.5)
        with pytest.raises(NotImplementedError):
            sf.dct(x.astype(np.longdouble))


# --- range and zeros ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ONE_D)
def test_near_overflow_a_result_that_fits_is_finite(name, rng):
    """The unnormalised transform of ``[1e308, 1e308]`` overflows; normalised it fits."""
    x = np.array([1e308, 1e308])
    for t in TYPES:
        for norm in ("ortho", "forward") if not name.startswith("i") else ("ortho", "backward"):
            got = getattr(fft, name)(x, type=t, norm=norm)
            ref = getattr(sf, name)(x.astype(np.longdouble), type=t, norm=norm)
            assert np.all(np.isfinite(got)), (t, norm, got)
            assert rel_err(got, ref) <= 4 * U, (t, norm)
    y = rng.standard_normal((3, 20))  # scaling by powers of two keeps the bits
    for t in TYPES:
        f = getattr(fft, name)
        assert np.array_equal(f(y * 2.0 ** 1000, type=t, norm="ortho"),
                              f(y, type=t, norm="ortho") * 2.0 ** 1000)


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_zeros_come_out_positive(name):
    for t in TYPES:
        out = getattr(fft, name)(np.zeros((2, 6)), type=t)
        assert np.all(out == 0) and not np.any(np.signbit(out))


# --- the reduced transforms (N- and N/2-point FFTs with twiddles) -----------------------------

def test_reduction_rule_depends_on_type_and_length_only():
    from fft.reduced import reduction
    assert [reduction(1, N) for N in (2, 17, 48, 49, 64)] == ["direct"] * 3 + ["mirror"] * 2
    for t in (2, 3):
        assert [reduction(t, N) for N in (1, 7, 16, 17, 18, 1009, 4096)] == \
            ["direct", "direct", "direct", "makhoul", "half", "makhoul", "half"]
    assert [reduction(4, N) for N in (1, 7, 15, 16, 17, 127, 129, 1009, 4096)] == \
        ["direct"] * 3 + ["half", "direct", "direct", "mirror", "mirror", "half"]


@pytest.mark.parametrize("N", [16, 17, 33, 64])
@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("name", ONE_D)
def test_reduced_bits_do_not_depend_on_the_batch(name, t, N, rng):
    """Every reduction (direct, mirrored, Makhoul's N-point, N/2-point) keeps a line's bits."""
    x = rng.standard_normal((4, N))
    f = getattr(fft, name)
    Y = f(x, type=t)
    for i in range(len(x)):
        assert np.array_equal(Y[i], f(x[i], type=t)), i
    assert np.array_equal(f(np.ascontiguousarray(x.T), type=t, axis=0), Y.T)
    assert np.array_equal(f(np.stack([x, -3 * x[::-1]], axis=1), type=t)[:, 0], Y)
    nd = getattr(fft, name + "n")(np.stack([x, x]), type=t, axes=(-1,))
    assert np.array_equal(nd[1], Y)


@pytest.mark.parametrize("t", [2, 3, 4])
@pytest.mark.parametrize("name", ONE_D)
def test_accuracy_reduced_lengths(name, t, rng):
    """The issue's lengths where types II-IV are reduced (and 4096): below scipy's error."""
    for N in (17, 18, 60, 128, 1000, 4096):
        ours, theirs = errors(name, rng.standard_normal((4, N)), type=t)
        assert ours <= bound(extension(name.lstrip("i")[:3], t, N)), (N, ours, theirs)
        assert ours <= theirs, (N, ours, theirs)


@pytest.mark.parametrize("N", [18, 33])
@pytest.mark.parametrize("name", ONE_D)
def test_reduced_near_overflow(name, N, rng):
    """Unnormalised, the transform of ``x`` (``2N x`` at ``k = 0``) overflows; normalised
    it fits (about ``sqrt(N) x``)."""
    x = np.full(N, 0.5e308 / math.sqrt(N))
    for t in (2, 3, 4):
        norm = "ortho" if not name.startswith("i") else "backward"
        got = getattr(fft, name)(x, type=t, norm=norm)
        ref = getattr(sf, name)(x.astype(np.longdouble), type=t, norm=norm)
        assert np.all(np.isfinite(got)), (t, got)
        assert rel_err(got, ref) <= 4 * U, t
    y = rng.standard_normal((3, N))
    for t in (2, 3, 4):
        f = getattr(fft, name)
        assert np.array_equal(f(y * 2.0 ** 1000, type=t, norm="ortho"),
                              f(y, type=t, norm="ortho") * 2.0 ** 1000)


def test_error_free_products_are_exact(rng):
    """The kernels' TwoProduct and TwoSum are error-free (no fused multiply-add)."""
    from fractions import Fraction
    from fft.reduced import two_prod as _two_prod, two_sum as _two_sum
    for a, b in rng.standard_normal((200, 2)) * np.exp2(rng.integers(-40, 40, (200, 2))):
        p, e = _two_prod(a, b)
        assert Fraction(p) + Fraction(e) == Fraction(a) * Fraction(b)
        s, e = _two_sum(a, b)
        assert Fraction(s) + Fraction(e) == Fraction(a) + Fraction(b)


@pytest.mark.slow
def test_scipys_own_real_transform_suite_passes_with_fft_as_the_only_backend():
    # scipy.fft's tests of dct/dst/idct/idst and their n-D forms, with fft.scipy_backend
    # as the global backend and only=True: a declined call would raise, so every call
    # is served by fft
    import os
    import subprocess
    import sys

    import scipy.fft
    path = os.path.join(scipy.fft.__path__[0], "tests", "test_real_transforms.py")
    if not os.path.exists(path):
        pytest.skip("scipy's tests are not installed")
    code = ("import sys, pytest, scipy.fft, fft\n"
            "scipy.fft.set_global_backend(fft.scipy_backend, only=True)\n"
            f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {path!r}]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=os.path.dirname(path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout

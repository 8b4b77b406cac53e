"""The transforms of :mod:`fft` against scipy.fft: accuracy, semantics, errors, the backend.

Reference: scipy.fft on long double input (pocketfft in extended precision, 64-bit
mantissa), so the FP64 results' errors are measured to about 2**-64.
"""

import math

import numpy as np
import pytest
import scipy.fft as sf
from hypothesis import given, settings
from hypothesis import strategies as st

import fft

U = 2.0 ** -53
C2C = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"]
R2C = ["rfft", "rfft2", "rfftn", "ihfft"]  # real input, complex output
C2R = ["irfft", "irfft2", "irfftn", "hfft"]  # complex input, real output
ALL = C2C + R2C + C2R
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
NORMS = [None, "backward", "ortho", "forward"]


def rel_err(y, ref):
    """Relative L2 error of ``y`` against ``ref``, computed in long double."""
    d = np.asarray(y).astype(ref.dtype) - ref
    return float(np.sqrt(np.sum(np.abs(d) ** 2) / np.sum(np.abs(ref) ** 2)))


def sample(name, shape, rng):
    """A standard normal input of the kind ``name`` takes (real for R2C, else complex)."""
    x = rng.standard_normal(shape)
    return x if name in R2C else x + 1j * rng.standard_normal(shape)


def longdouble(x):
    return x.astype(np.clongdouble if np.iscomplexobj(x) else np.longdouble)


def bound(N, bluestein=False):
    """``2u sqrt(log2 N)`` (``4u`` for Bluestein's prime lengths)."""
    return (4 if bluestein else 2) * U * math.sqrt(max(1.0, math.log2(N)))


def check_accuracy(name, x, **kw):
    got = getattr(fft, name)(x, **kw)
    ref = getattr(sf, name)(longdouble(x), **kw)
    ours, theirs = rel_err(got, ref), rel_err(getattr(sf, name)(x, **kw), ref)
    assert got.shape == ref.shape
    return ours, theirs


# --- accuracy -------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 5, 16, 60, 97, 128, 1024, 2053, 4099])
@pytest.mark.parametrize("name", ONE_D)
def test_accuracy_1d(name, n, rng):
    """Below scipy's own float64 error (times 1.5) and below the ``2u sqrt(log2 N)`` bound."""
    kw = {"n": n} if name in ("irfft", "hfft") else {}
    m = n // 2 + 1 if kw else n
    ours, theirs = check_accuracy(name, sample(name, (2, m), rng), **kw)
    big_prime = any(r > fft.DENSE_LIMIT for r in fft.factorize(n))
    assert ours <= bound(n, big_prime), (ours, theirs)
    assert ours <= 1.5 * theirs, (ours, theirs)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ALL)
def test_accuracy_norms(name, norm, rng):
    k = 1 if name in ONE_D else 2 if "2" in name else 3
    shape = {1: (3, 60), 2: (12, 10), 3: (4, 6, 5)}[k]
    ours, theirs = check_accuracy(name, sample(name, shape, rng), norm=norm)
    lengths = list(shape[-k:])
    if name in C2R:
        lengths[-1] = 2 * (lengths[-1] - 1)
    assert ours <= bound(math.prod(lengths)), (ours, theirs)
    assert ours <= 1.5 * theirs, (ours, theirs)


@pytest.mark.parametrize("scale", [2.0 ** 1000, 2.0 ** -1000])
def test_accuracy_at_extreme_scales(scale, rng):
    x = sample("fft", 128, rng) * scale
    ours, theirs = check_accuracy("fft", x)
    assert ours <= bound(128) and ours <= 1.5 * theirs


@pytest.mark.parametrize("n", [15, 16, 97, 98, 2053])
def test_round_trips(n, rng):
    z, x = sample("fft", (2, n), rng), rng.standard_normal((2, n))
    assert rel_err(fft.ifft(fft.fft(z)), longdouble(z)) <= 2 * bound(n, n == 2053)
    back = fft.irfft(fft.rfft(x), n)
    assert back.shape == x.shape and back.dtype == np.float64
    assert rel_err(back, longdouble(x)) <= 2 * bound(n, n == 2053)
    back = fft.hfft(fft.ihfft(x), n)
    assert rel_err(back, longdouble(x)) <= 2 * bound(n, n == 2053)


# --- shapes, axes, n and s: scipy's semantics -------------------------------------------

def compare(name, x, **kw):
    """Same outcome as scipy: the same error type, or the same shape, dtype and values."""
    try:
        ref = getattr(sf, name)(x, **kw)
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        with pytest.raises(type(exc)):
            getattr(fft, name)(x, **kw)
        return None
    got = getattr(fft, name)(x, **kw)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.dtype, ref.dtype)
    tol = 1e-5 if got.dtype in (np.float32, np.complex64) else 1e-13
    scale = max(1.0, float(np.max(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale)
    return got


@st.composite
def calls(draw):
    name = draw(st.sampled_from(ALL))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=1, max_size=3)))
    dtype = draw(st.sampled_from([np.float64, np.complex128, np.float32, np.complex64,
                                  np.int64]))
    ndim, kw = len(shape), {}
    length = st.integers(1, 9)
    if name in ONE_D:
        if draw(st.booleans()):
            kw["n"] = draw(length)
        if draw(st.booleans()):
            kw["axis"] = draw(st.integers(-ndim - 1, ndim))
    else:
        if draw(st.booleans()):
            axes = draw(st.permutations(range(ndim)))[:draw(st.integers(1, ndim))]
            kw["axes"] = [a - ndim * draw(st.booleans()) for a in axes]
        if draw(st.booleans()):
            k = len(kw.get("axes", ())) or draw(st.integers(1, ndim))
            kw["s"] = draw(st.lists(st.one_of(length, st.just(-1)), min_size=k, max_size=k))
    if draw(st.booleans()):
        kw["norm"] = draw(st.sampled_from(NORMS))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal(shape + (2,)) * 4
    x = (x[..., 0] + 1j * x[..., 1]) if np.dtype(dtype).kind == "c" else x[..., 0]
    return name, x.astype(dtype), kw


@settings(max_examples=300)
@given(calls())
def test_semantics_like_scipy(call):
    """Random shapes, axes (negative too), ``n`` and ``s`` (crop, pad, -1), dtypes, norms."""
    name, x, kw = call
    if name in ("irfft2", "irfftn") and "s" not in kw and last_axis_length(name, x, kw) == 1:
        # scipy's irfftn and irfft2 return length 1 where the default 2 (m - 1) is 0 (scipy's
        # irfft raises there); fft raises for all three.
        with pytest.raises(ValueError, match="invalid number of data points"):
            getattr(fft, name)(x, **kw)
        return
    compare(name, x, **kw)


def last_axis_length(name, x, kw):
    """The input's length along the last transformed axis, None where scipy raises."""
    try:
        getattr(sf, name)(x, **kw)
    except Exception:  # noqa: BLE001
        return None
    axes = kw.get("axes", range(x.ndim) if name == "irfftn" else (-2, -1))
    return x.shape[list(axes)[-1]]


@pytest.mark.parametrize("name,x,kw", [
    ("fft", np.ones((0, 5)), {}),                       # zero-size batch
    ("rfftn", np.ones((3, 0, 4)), {"axes": (0, 2)}),
    ("irfft", np.ones((2, 0, 3)), {"axis": 0}),
    ("fft", np.ones((4, 1)), {}),                       # length-1 transforms
    ("irfft", np.ones((3, 1)), {"n": 1}),
    ("hfft", np.ones(1), {"n": 1}),
    ("fftn", np.ones((2, 3, 4)), {"axes": (2, 0)}),      # axes without s, out of order
    ("irfftn", np.ones((2, 3, 4)) + 1j, {"s": (5, 7)}),  # s without axes: the last ones
    ("irfftn", np.ones((3, 4)) + 1j, {"s": (-1, -1)}),   # -1: the input's length
    ("irfft2", np.ones((3, 4)) + 1j, {"s": (2, 7)}),     # crop one axis, pad the other
    ("fft", [1, 2, 3], {}), ("rfft", [[1.5, 2], [3, 4]], {"axis": 0}),  # lists
    ("ifft", np.arange(6.0).astype(">f8"), {}),          # big-endian
])
def test_semantics_edge_cases(name, x, kw):
    compare(name, x, **kw)


@pytest.mark.parametrize("n", [7, 8])  # odd and even output lengths
@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_odd_and_even_real_lengths(name, n, rng):
    z = sample("fft", (3, 5), rng)
    for kw in ({"n": n}, {}, {"n": n, "axis": 0}):
        compare(name, z, **kw)


@pytest.mark.parametrize("name,x,kw", [("fftn", np.float64(2.5), {}),
                                       ("ifftn", np.arange(6.0).reshape(2, 3), {"axes": ()})])
def test_no_axis_transformed(name, x, kw):
    # as scipy: the input as it is (its own dtype; the array itself) when no axis is
    # transformed
    got, ref = getattr(fft, name)(x, **kw), getattr(sf, name)(x, **kw)
    assert got.shape == ref.shape and got.dtype == ref.dtype and np.array_equal(got, ref)
    assert got is x or not isinstance(x, np.ndarray)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "rfftn",
                                  "irfftn", "fft2"])
def test_zero_d_input(name):
    compare(name, np.float64(2.5))


# --- errors: scipy's kind of error --------------------------------------------------------

X8 = np.ones(8)
X22 = np.ones((2, 2))


@pytest.mark.parametrize("name,x,kw", [
    ("fft", X8, {"n": 0}), ("fft", X8, {"n": -1}), ("irfft", X8, {"n": -1}),
    ("rfft", X8, {"n": -3}), ("hfft", X8, {"n": -1}), ("irfft", np.ones(1), {}),
    ("fftn", X22, {"axes": (0, 0)}), ("fftn", X22, {"axes": (1, -1)}),
    ("fft", X8, {"axis": 1}), ("fft", X8, {"axis": -2}), ("rfftn", X22, {"axes": (0, 2)}),
    ("fft2", X8, {}), ("fftn", X8, {"s": (2, 2)}),
    ("fft", X8, {"norm": "bad"}), ("irfftn", X22, {"norm": "ortho "}),
    ("fft", X8, {"workers": 0}), ("rfft", X8, {"workers": -10 ** 6}),
    ("fftn", X22, {"s": (2, 2), "axes": (0,)}), ("ifft2", X22, {"s": (2,)}),
    ("fftn", X22, {"s": (0, 2)}), ("fftn", X22, {"s": (-2, 2)}),
    ("rfft", X8 + 1j, {}), ("ihfft", X8 + 1j, {}), ("rfftn", X22, {"axes": ()}),
    ("fft", np.ones((3, 0)), {}), ("fft", X8, {"n": 2.0}),
])
def test_errors_like_scipy(name, x, kw):
    with pytest.raises(Exception) as theirs:
        getattr(sf, name)(x, **kw)
    with pytest.raises(type(theirs.value)):
        getattr(fft, name)(x, **kw)


def test_error_messages_name_the_cause():
    with pytest.raises(ValueError, match="shape requires more axes than are present"):
        fft.fftn(X8, s=(2, 2))
    with pytest.raises(ValueError, match=r"invalid number of data points \(-1\)"):
        fft.irfft(X8, n=-1)


@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_zero_output_length(name):
    # scipy returns one point for n=0 here (its irfft raises for the default length 0, and
    # its fft for n=0): fft raises for every length below 1.
    with pytest.raises(ValueError, match="invalid number of data points"):
        getattr(fft, name)(X8, n=0)


@pytest.mark.parametrize("x,match", [
    # scipy raises ValueError (its float conversion fails); numpy's own FFT raises TypeError:
    # the input's type is what is wrong, so fft raises TypeError.
    (np.array(["a", "b"]), "numeric"), (["a", "b"], "numeric"),
    # scipy converts object arrays (None becomes nan); fft refuses them.
    (np.array([1.0, None], dtype=object), "numeric"),
    (np.array([1, 2], dtype=object), "numeric"),
    # scipy ignores the mask silently; fft asks for it to be filled.
    (np.ma.array([1.0, 2.0], mask=[0, 1]), "masked"),
    (np.ones(4, np.longdouble), "long double"), (np.ones(4, np.clongdouble), "long double"),
])
@pytest.mark.parametrize("name", ["fft", "rfft", "irfftn"])
def test_documented_type_errors(name, x, match):
    with pytest.raises(TypeError, match=match):
        getattr(fft, name)(x)


@pytest.mark.parametrize("kw", [{"axes": (0.0,)}, {"s": (2.0, 2)}])
def test_non_integer_axes_and_lengths(kw):
    # scipy: ValueError ("must be a scalar or iterable of integers"); a float where an integer
    # is wanted is a TypeError in Python (operator.index), which fft keeps.
    with pytest.raises(TypeError):
        fft.fftn(X22, **kw)


@pytest.mark.parametrize("name", ALL)
def test_long_double_refused_everywhere(name):
    x = np.ones((2, 4), np.longdouble if name in R2C else np.clongdouble)
    with pytest.raises(TypeError, match="long double"):
        getattr(fft, name)(x)


# --- the scipy backend ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_backend_gives_the_same_bits(name, rng):
    x = sample(name, (4, 6), rng)
    with sf.set_backend(fft.scipy_backend), fft.stage_records() as stages:
        got = getattr(sf, name)(x, norm="ortho")
    assert stages, "the backend did not run fft's stages"
    want = getattr(fft, name)(x, norm="ortho")
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_backend_defers_what_it_does_not_serve(rng):
    x = rng.standard_normal(16)
    with sf.set_backend(fft.scipy_backend):
        fht = sf.fht(x, 0.1, 0.0)  # scipy's; its inner rfft/irfft calls are fft's
        with fft.stage_records() as stages:
            ld = sf.fft(x.astype(np.longdouble))
            obj = sf.fft(x.astype(object))
    assert not stages
    assert np.allclose(fht, sf.fht(x, 0.1, 0.0), rtol=1e-13, atol=1e-13)
    assert ld.dtype == np.clongdouble and np.array_equal(ld, sf.fft(x.astype(np.longdouble)))
    assert np.array_equal(obj, sf.fft(x))
    with sf.set_backend(fft.scipy_backend, only=True):
        with pytest.raises(NotImplementedError):
            sf.fht(x, 0.1, 0.0)
        with pytest.raises(NotImplementedError):
            sf.fft(x.astype(np.longdouble))


# --- bits do not depend on the batch ------------------------------------------------------

@pytest.mark.parametrize("name,n", [(name, n) for name in ONE_D for n in (60, 128)]
                         + [("fft", 2053), ("irfft", 2053)])  # Bluestein
def test_bits_do_not_depend_on_the_batch(name, n, rng):
    x = sample(name, (5, n if name not in ("irfft", "hfft") else n // 2 + 1), rng)
    kw = {"n": n} if name in ("irfft", "hfft") else {}
    f = getattr(fft, name)
    Y = f(x, **kw)
    for i in range(len(x)):
        assert np.array_equal(Y[i], f(x[i], **kw)), i
    assert np.array_equal(f(np.ascontiguousarray(x.T), axis=0, **kw), Y.T)
    assert np.array_equal(f(np.stack([x, x[::-1]], axis=1), **kw)[:, 0], Y)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft"])
def test_layouts_and_workers_keep_the_bits(name, rng):
    x = sample(name, (6, 10), rng)
    f = getattr(fft, name)
    want = f(np.ascontiguousarray(x[::-2, ::-1]))
    assert np.array_equal(f(x[::-2, ::-1]), want)
    assert np.array_equal(f(np.asfortranarray(x)), f(x))
    assert np.array_equal(f(x, workers=1), f(x)) and np.array_equal(f(x, workers=-1), f(x))


def test_nd_transforms_are_successive_1d_transforms(rng):
    """In the documented order: axes run in reverse, the real axis (last) first."""
    z, x = sample("fft", (4, 6, 5), rng), rng.standard_normal((4, 6, 5))
    assert np.array_equal(fft.fftn(z), fft.fft(fft.fft(fft.fft(z, axis=2), axis=1), axis=0))
    assert np.array_equal(fft.fft2(z, axes=(2, 0)), fft.fft(fft.fft(z, axis=0), axis=2))
    assert np.array_equal(fft.ifftn(z, norm="forward"),
                          fft.ifft(fft.ifft(fft.ifft(z, axis=2, norm="forward"), axis=1,
                                            norm="forward"), axis=0, norm="forward"))
    assert np.array_equal(fft.rfftn(x), fft.fft(fft.fft(fft.rfft(x), axis=1), axis=0))
    h = fft.rfftn(x)
    inner = fft.ifft(fft.ifft(h, axis=1, norm="forward"), axis=0, norm="forward")
    assert np.array_equal(fft.irfftn(h, (4, 6, 5), norm="forward"),
                          fft.irfft(inner, 5, norm="forward"))


# --- precision of the result, inputs left alone, special values -------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
@pytest.mark.parametrize("name", ALL)
def test_single_precision_like_scipy(name, dtype, rng):
    if name in R2C and np.dtype(dtype).kind == "c":
        return  # complex input to a real-input transform: TypeError, tested above
    x = (sample("fft", (4, 6), rng) if np.dtype(dtype).kind == "c"
         else rng.standard_normal((4, 6))).astype(dtype)
    got = getattr(fft, name)(x)
    assert got.dtype == getattr(sf, name)(x).dtype
    ref = getattr(sf, name)(longdouble(x.astype(np.complex128 if x.dtype.kind == "c"
                                                else np.float64)))
    # the FP64 result rounded once per part to single precision
    assert rel_err(got, ref) <= 2.0 ** -24 * (1 + 1e-3)


@pytest.mark.parametrize("name", ALL)
def test_inputs_never_modified(name, rng):
    x = sample(name, (4, 6), rng)
    keep = x.copy()
    f = getattr(fft, name)
    f(x, overwrite_x=True)
    f(x, s=(3, 9), axes=(0, 1), norm="ortho") if name not in ONE_D else f(x, 5, axis=0)
    if name in ONE_D:
        f(x, 9, overwrite_x=True)
    assert np.array_equal(x, keep)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf * 0 in the twiddle products
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, complex(np.inf, 1.0),
                                   complex(0.0, np.nan)])
@pytest.mark.parametrize("name,n", [(name, n) for name in ONE_D + ["fft2", "rfft2", "irfft2"]
                                    for n in (16, 97, 128)] + [("fft", 2053), ("irfft", 2053)])
def test_non_finite_input_gives_non_finite_output(name, n, value, rng):
    """No silent finite garbage: non-finite (nan for a nan input) wherever scipy's is; the
    other lines of the batch keep their bits."""
    if name in R2C and isinstance(value, complex):
        return
    shape = (5, n if name not in C2R else n // 2 + 1)
    x = sample(name, shape, rng)
    x[2, 3] = value
    f = getattr(fft, name)
    got, ref = f(x), getattr(sf, name)(x)
    assert not np.any(~np.isfinite(ref) & np.isfinite(got))
    if np.isnan(value):
        assert not np.any(np.isnan(ref) & ~np.isnan(got))
    if name in ONE_D:
        rows = [0, 1, 3, 4]
        assert np.array_equal(got[rows], f(x[rows]))


@pytest.mark.parametrize("n", [64, 65])
@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_ignored_imaginary_parts_cost_no_accuracy(name, n):
    # the imaginary parts of the zero and (even n) Nyquist frequencies do not enter a
    # real result; however large, they must not set their column's shift
    rng = np.random.default_rng(n)
    X = sf.rfft(rng.standard_normal(n))
    Y = X.copy()
    Y[0] += 1e20j
    if n % 2 == 0:
        Y[-1] += 1e20j
    f, g = getattr(fft, name), getattr(sf, name)
    assert np.array_equal(f(Y, n), f(X, n))  # dropped before anything sees them
    assert np.abs(f(Y, n) - g(X, n)).max() <= 8 * 2.0 ** -53 * np.abs(g(X, n)).max()

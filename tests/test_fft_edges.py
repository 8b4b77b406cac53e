"""Edge cases of :mod:`fft`: no axis transformed, inputs near overflow, the Hermitian n-D
transforms, and what the scipy backend serves or declines."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.fft as sf

import fft
from fft import transforms

SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
#: |x| from which a float64 rounds to inf: 2**1024 (1 - 2**-54)
OVERFLOW = np.longdouble(2.0 ** 1023) * (2 - np.longdouble(2.0) ** -53)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# --- 1. no axis transformed: the input itself, as scipy.fft ----------------------------

NO_AXIS_INPUTS = [
    np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3) + 1j,
    np.arange(6, dtype=np.float32).reshape(2, 3), (np.arange(6) + 1j).astype(np.complex64),
    np.arange(6, dtype=np.float16), np.arange(6).reshape(3, 2), np.ones((2, 2), bool),
    np.arange(6.0).astype(">f8"), np.arange(12.0).reshape(3, 4)[:, ::2],  # not contiguous
]


@pytest.mark.parametrize("kw", [{"axes": ()}, {"axes": (), "s": ()}, {"s": ()},
                                {"axes": [], "norm": "ortho", "workers": 1}])
@pytest.mark.parametrize("name", ["fftn", "ifftn", "fft2", "ifft2"])
@pytest.mark.parametrize("x", NO_AXIS_INPUTS, ids=lambda x: f"{x.dtype}{x.shape}")
def test_no_axis_returns_the_input_itself(name, x, kw):
    if name.endswith("2") and "axes" not in kw:
        kw = dict(kw, axes=())  # fft2's default axes with s=() is an error in both
    keep = x.copy()
    ref, got = getattr(sf, name)(x, **kw), getattr(fft, name)(x, **kw)
    assert ref is x  # what scipy does: the input itself, of its own dtype
    assert got is x
    assert np.array_equal(x, keep)
    with sf.set_backend(fft.scipy_backend, only=True):
        assert getattr(sf, name)(x, **kw) is x


@pytest.mark.parametrize("x", [np.float64(2.5), np.float32(1.5), np.complex128(1 - 2j),
                               np.array(3), np.array(2.5), np.array(1 + 2j, np.complex64),
                               2.5, 3, 1j, np.array(True)], ids=repr)
@pytest.mark.parametrize("name", ["fftn", "ifftn"])
def test_zero_d_input_returned_as_scipy_returns_it(name, x):
    ref, got = getattr(sf, name)(x), getattr(fft, name)(x)
    assert type(got) is np.ndarray and got.ndim == 0
    assert same_bits(got, ref)
    assert (got is x) == (ref is x)  # 0-d arrays: themselves; scalars: a new 0-d array
    with sf.set_backend(fft.scipy_backend, only=True):
        assert same_bits(getattr(sf, name)(x), ref)


def test_no_axis_list_input_becomes_an_array():
    x = [[1.0, 2.0], [3.0, 4.0]]
    for name in ("fftn", "ifft2"):
        got, ref = getattr(fft, name)(x, axes=()), getattr(sf, name)(x, axes=())
        assert type(got) is np.ndarray and same_bits(got, ref)


@pytest.mark.parametrize("name,x,kw", [
    ("fftn", np.ones((2, 2)), {"axes": (), "workers": 0}),
    ("fftn", np.ones((2, 2)), {"axes": (0, 0)}),
    ("fft2", np.float64(1.0), {}),                     # 0-d: axes (-2, -1) do not exist
    ("rfftn", np.ones((2, 2)), {"axes": ()}), ("irfftn", np.ones((2, 2)), {"axes": ()}),
    ("hfftn", np.ones((2, 2)), {"axes": ()}), ("ihfftn", np.ones((2, 2)), {"axes": ()}),
    ("hfft2", np.ones((2, 2)), {"axes": ()}), ("ihfft2", np.ones((2, 2)), {"axes": ()}),
    ("hfftn", np.float64(1.0), {}), ("ihfftn", np.float64(1.0), {}),
    ("ihfftn", np.ones((2, 2)) + 1j, {}),
])
def test_no_axis_errors_like_scipy(name, x, kw):
    with pytest.raises(Exception) as theirs:
        getattr(sf, name)(x, **kw)
    with pytest.raises(type(theirs.value)):
        getattr(fft, name)(x, **kw)


def test_no_axis_still_checks_norm_and_s_and_refuses_long_double():
    # scipy returns x for these two (it ignores norm, and s when axes is empty); fft
    # checks its arguments anyway
    x = np.ones((2, 2))
    assert sf.fftn(x, axes=(), norm="bad") is x and sf.ifftn(x, axes=(), s=(2,)) is x
    with pytest.raises(ValueError, match="Invalid norm"):
        fft.fftn(x, axes=(), norm="bad")
    with pytest.raises(ValueError, match="same length"):
        fft.ifftn(x, axes=(), s=(2,))
    ld = np.ones((2, 2), np.longdouble)
    with pytest.raises(TypeError, match="long double"):
        fft.fftn(ld, axes=())
    with sf.set_backend(fft.scipy_backend):  # declined: scipy's backend returns it
        assert sf.fftn(ld, axes=()) is ld


# --- 2. inputs near overflow ----------------------------------------------------------

@pytest.mark.parametrize("n", [2, 8, 64])
def test_near_overflow_constant_gives_the_finite_exact_result(n):
    x = np.full(n, 1.5e308)
    want = np.zeros(n, complex)
    want[0] = 1.5e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no overflow warning either
        inv = fft.ifft(x)
        fwd = fft.fft(x, norm="forward")
        hf = fft.hfft(x[: n // 2 + 1] + 0j, n, norm="forward")  # constant spectrum
        irf = fft.irfft(x[: n // 2 + 1] + 0j, n)
        full = fft.fft(x)
    assert np.array_equal(inv, want) and np.array_equal(fwd, want)
    assert np.array_equal(hf, want.real) and np.array_equal(irf, want.real)
    # the exact X[0] = 1.5e308 n overflows: +inf there, exact zeros elsewhere (no NaN)
    assert full[0] == np.inf and np.array_equal(full[1:], np.zeros(n - 1))
    # ortho: X[0] = v sqrt(n) fits, the unnormalised v n (the old intermediate) does not
    v = 1.7e308 / np.sqrt(n)
    ortho = fft.fft(np.full(n, v), norm="ortho")
    exact = np.longdouble(v) * np.sqrt(np.longdouble(n))
    assert np.isfinite(ortho[0]) and abs(ortho[0].real - exact) <= 2.0 ** -52 * exact
    assert np.array_equal(ortho[1:], np.zeros(n - 1))


def reference(name, x, **kw):
    """scipy.fft in long double: range to 2**16384, so nothing overflows there."""
    ld = x.astype(np.clongdouble if np.iscomplexobj(x) else np.longdouble)
    return getattr(sf, name)(ld, **kw)


def check_range(got, ref, tol):
    """``+-inf`` exactly where the exact part overflows, no NaN, FP64-grade elsewhere
    (normwise: the largest error against the RMS of the exact result, overflowing parts
    included: long double holds them)."""
    assert not np.isnan(got).any()
    parts = ("real", "imag") if np.iscomplexobj(got) else ("real",)
    fin = []
    for part in parts:
        g, r = getattr(got, part), getattr(ref, part)
        over = np.abs(r) >= OVERFLOW
        assert np.array_equal(np.isinf(g), over)
        assert np.array_equal(np.sign(g[over]), np.sign(r[over]).astype(float))
        fin.append((g[~over], r[~over]))
    rms = np.sqrt(np.mean(np.abs(ref) ** 2))
    err = max(float(np.abs(g - r).max() / rms) if g.size else 0.0 for g, r in fin)
    assert err <= tol, err


@pytest.mark.parametrize("n,scale", [(4099, 1e307), (4099, 2e305), (2053, 3e306),
                                     (64, 1e307), (97, 1e307)])
@pytest.mark.parametrize("name", ["fft", "ifft"])
def test_near_overflow_bluestein_and_dense(name, n, scale):
    """Bluestein primes used to give all NaN: now inf exactly where the result overflows."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * scale
    got = getattr(fft, name)(x)
    ref = reference(name, x)
    check_range(got, ref, 4e-15)
    if name == "fft" and n in (4099, 2053) and scale > 1e306:
        assert np.isinf(got).any() and np.isfinite(got).any()  # both kinds occur


@pytest.mark.parametrize("name,shape,kw", [
    ("rfft", (3, 4099), {}), ("irfft", (2, 65), {"n": 128}), ("hfft", (2, 33), {}),
    ("ihfft", (2, 97), {}), ("fft2", (16, 24), {}), ("ifftn", (4, 6, 10), {}),
    ("rfftn", (8, 12), {"norm": "ortho"}), ("irfftn", (6, 9), {}), ("hfftn", (6, 9), {}),
    ("ihfft2", (8, 12), {}), ("irfft2", (8, 7), {"s": (8, 12), "norm": "forward"}),
])
def test_near_overflow_every_transform(name, shape, kw):
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, shape) * 1.7e308
    if name not in ("rfft", "ihfft", "rfftn", "ihfft2"):
        x = x + 1j * rng.uniform(-1, 1, shape) * 1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = getattr(fft, name)(x, **kw)
    check_range(got, reference(name, x, **kw), 1e-15)


def test_near_overflow_single_line_gets_the_bits_of_the_unscaled_line():
    """Scaling by a power of two commutes with the pipeline: a normal line in a scaled
    batch has the bits it has alone, and a scaled input those of its unscaled copy."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 60)) + 1j * rng.standard_normal((3, 60))
    batch = x.copy()
    batch[0] = 1.5e308
    y = fft.ifft(batch)
    assert y[0, 0] == 1.5e308
    assert same_bits(y[1:], fft.ifft(x[1:]))
    p3, p60 = fft.get_plan(3), fft.get_plan(60)
    for name, plans in [("fft", [p60]), ("ifft", [p60]), ("fft2", [p3, p60])]:
        k = 1013
        assert transforms._range_shift(x * 2.0 ** k, plans) > 0  # the call is scaled
        a = getattr(fft, name)(x)
        b = getattr(fft, name)(x * 2.0 ** k)
        assert same_bits(b, a * 2.0 ** k)
    z = rng.standard_normal(4099) * 1e300  # Bluestein, scaled (growth 2**26)
    assert transforms._range_shift(z, [fft.get_plan(4099)]) > 0
    assert same_bits(fft.fft(z), fft.fft(z * 2.0 ** -60) * 2.0 ** 60)


def test_below_the_threshold_nothing_is_scaled(monkeypatch):
    shifts = []
    real = transforms._shrink
    monkeypatch.setattr(transforms, "_shrink", lambda a, s: shifts.append(s) or real(a, s))
    plan = fft.get_plan(64)
    assert plan.growth == 6
    x = np.zeros(64)
    x[5] = np.nextafter(2.0 ** 1014, 0)  # M < 2**1014: e + g = 1014 + 6 = 1020
    fft.fft(x)
    fft.fft(np.random.default_rng(0).standard_normal((4, 64)) * 1e250)
    fft.irfftn(np.ones((4, 33)) * 1e300 + 1e300j, s=(4, 64))  # g = 2 + 6
    assert shifts == [0, 0, 0]
    x[5] = 2.0 ** 1014  # e = 1015: one bit over
    fft.fft(x)
    assert shifts[-1] == 1
    # non-finite entries do not set the shift; they propagate as before
    x[7] = np.inf
    y = fft.fft(np.stack([x, np.full(64, 1e300)]))
    assert shifts[-1] == 1 and not np.isfinite(y[0]).any() and np.isfinite(y[1]).all()


@pytest.mark.parametrize("n,growth", [(1, 0), (2, 1), (60, 6), (64 * 64, 12), (97, 7),
                                      (1009, 10), (4099, 26), (2 * 4099, 27)])
def test_plan_growth_bounds_the_stages(n, growth):
    assert fft.Plan(n).growth == growth


# --- 3. the Hermitian n-D transforms ---------------------------------------------------

HERM = [("hfftn", "irfftn"), ("hfft2", "irfft2"), ("ihfftn", "rfftn"), ("ihfft2", "rfft2")]
HERM_KW = [{}, {"norm": "ortho"}, {"norm": "forward"}, {"norm": "backward", "s": (3, 7)},
           {"s": (4, 8), "axes": (0, 2)}, {"axes": (1,)}, {"s": (-1, 9)},
           {"axes": (-1, 0)}, {"workers": 1}]


@pytest.mark.parametrize("kw", HERM_KW, ids=str)
@pytest.mark.parametrize("name,base", HERM)
def test_hermitian_nd_like_scipy(name, base, kw):
    if name.endswith("2") and len(kw.get("axes", (0, 1))) != 2:
        return
    rng = np.random.default_rng(11)
    shape = (4, 5, 6)
    x = rng.standard_normal(shape)
    if name.startswith("h"):
        x = x + 1j * rng.standard_normal(shape)
    got, want = getattr(fft, name)(x, **kw), getattr(sf, name)(x, **kw)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.abs(got - want).max() <= 1e-15 * np.abs(want).max()
    # scipy's definitions, bit for bit, on fft's own passes
    norm = SWAP[kw.get("norm")]
    other = dict(kw, norm=norm)
    if name.startswith("h"):
        assert same_bits(got, getattr(fft, base)(np.conj(x), **other))
    else:
        assert same_bits(got, np.conj(getattr(fft, base)(x, **other)))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.float16, np.int64, bool])
@pytest.mark.parametrize("name", ["hfftn", "hfft2", "ihfftn", "ihfft2"])
def test_hermitian_nd_dtypes_like_scipy(name, dtype):
    x = (np.arange(24).reshape(4, 6) % 5).astype(dtype)
    if name.startswith("i") and np.dtype(dtype).kind == "c":
        x = x.real
    got, want = getattr(fft, name)(x), getattr(sf, name)(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.allclose(got, want, rtol=1e-6, atol=1e-5)


def test_hermitian_one_axis_is_the_1d_transform():
    rng = np.random.default_rng(5)
    z = rng.standard_normal((3, 9)) + 1j * rng.standard_normal((3, 9))
    r = rng.standard_normal((3, 16))
    assert same_bits(fft.hfftn(z, axes=(-1,)), fft.hfft(z))
    assert same_bits(fft.hfftn(z, s=(11,), axes=(0,)), fft.hfft(z, 11, axis=0))
    assert same_bits(fft.ihfftn(r, axes=(1,), norm="ortho"), fft.ihfft(r, norm="ortho"))


def test_hermitian_round_trip():
    rng = np.random.default_rng(8)
    r = rng.standard_normal((6, 10))
    assert np.allclose(fft.hfft2(fft.ihfft2(r), s=r.shape), r, rtol=0, atol=1e-14)
    assert np.allclose(fft.hfftn(fft.ihfftn(r, norm="ortho"), s=r.shape, norm="ortho"), r,
                       rtol=0, atol=1e-14)


@pytest.mark.parametrize("name", ["hfft2", "ihfft2", "hfftn", "ihfftn"])
def test_backend_serves_the_hermitian_nd_transforms(name):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6))
    if name.startswith("h"):
        x = x + 1j * rng.standard_normal((4, 6))
    with sf.set_backend(fft.scipy_backend, only=True), fft.stage_records() as stages:
        got = getattr(sf, name)(x, norm="ortho")
    assert stages, "the backend did not run fft's stages"
    assert same_bits(got, getattr(fft, name)(x, norm="ortho"))


def test_backend_declines_exactly_the_hankel_transforms():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(16)
    with sf.set_backend(fft.scipy_backend, only=True):
        for name in ("fht", "ifht"):
            with pytest.raises(NotImplementedError):
                getattr(sf, name)(x, 0.1, 0.0)
    with sf.set_backend(fft.scipy_backend), fft.stage_records() as stages:
        got = sf.dctn(x.reshape(4, 4).astype(np.longdouble))  # declined: scipy's serves it
    assert not stages and same_bits(got, sf.dctn(x.reshape(4, 4).astype(np.longdouble)))
    # every other multimethod of scipy.fft is served, the real-to-real ones included
    served = set(transforms.__all__ + fft.realtransforms.__all__) & set(dir(sf))
    assert served == set(fft.scipy_backend._FUNCTIONS)
    assert len(served) == 26


@pytest.mark.slow
def test_global_backend_recipe():
    """As docs/fft.rst says: the global backend alone raises on declined calls; with scipy's
    registered behind it, they are served by scipy and the rest still by fft (run in a
    subprocess: the global backend is process state)."""
    code = textwrap.dedent("""
        import numpy as np, scipy.fft as sf, fft
        x = np.random.default_rng(0).standard_normal((4, 4))
        sf.set_global_backend(fft.scipy_backend)
        with fft.stage_records() as st:
            y = sf.hfft2(x + 0j)
        assert st and np.array_equal(y, fft.hfft2(x + 0j))
        for call in (lambda: sf.fht(x[0], 0.1, 0.0), lambda: sf.fft(x.astype(np.longdouble))):
            try:
                call()
                raise SystemExit("declined call did not raise")
            except NotImplementedError as e:
                assert "No selected backends" in str(e)
        sf.register_backend("scipy")
        d = sf.fht(x[0], 0.1, 0.0)
        assert sf.fft(x.astype(np.longdouble)).dtype == np.clongdouble
        with fft.stage_records() as st:
            z = sf.ifftn(x)
        assert st and np.array_equal(z, fft.ifftn(x))
        sf.set_global_backend("scipy")
        assert np.allclose(d, sf.fht(x[0], 0.1, 0.0), rtol=1e-13, atol=1e-13)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]

"""fft.distributed's dctn / dstn / idctn / idstn: bitwise equal to the serial transforms.

In process: the per-axis step (:func:`transform_lines` with the global range peaks) on
lines dealt to simulated ranks at random, every axis in turn, against serial
``fft.dctn`` etc.; the functions on a 1 x 1 grid (``MPI.COMM_SELF``) with their errors.
Under ``mpiexec -n 4``: tests/mpi/check_fft_r2r.py on slabs and pencils (slow).
"""

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fft
from fft.distributed.realtransforms import range_peaks, transform_lines
from fft.reduced import MAX_DIRECT, MAX_DIRECT_ODD_IV, reduction

FUNCS = {("dct", False): "dctn", ("dct", True): "idctn", ("dst", False): "dstn",
         ("dst", True): "idstn"}
NORMS = ("backward", "ortho", "forward")
#: odd, even, prime lengths around the direct product's thresholds (``reduction``): up to
#: 15 every type is direct, 16 is reduced for type IV, 17 for types II and III, 18 and 20
#: for types II-IV; type I and odd type IV stay direct here
LENGTHS = (2, 3, 5, 8, 15, 16, 17, 18, 20)
#: one axis may be longer: 49 is mirrored for type I (Makhoul for II, III; direct for
#: odd IV), 129 mirrored for types I and IV
LONG = (49, 129)


def same(a, b) -> bool:
    """Bitwise equality (NaN payloads and signs of zero included)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        a.view(np.int64), b.view(np.int64))


def data(rng, shape, profile: str, complex_: bool) -> np.ndarray:
    """``"normal"``; ``"range"``: one huge line (near overflow: the serial transform
    scales the whole array by a power of two) and some tiny ones (which that scaling
    pushes into the subnormals, so the scale changes their bits); ``"nonfinite"``."""
    X = rng.standard_normal(shape) * np.exp(rng.uniform(-20, 20, shape))
    if complex_:
        X = X + 1j * rng.standard_normal(shape)
    if profile == "range":
        flat = X.reshape(-1, shape[-1])
        huge, *tiny = rng.permutation(len(flat))[:max(2, len(flat) // 3)]
        flat[huge] = flat[huge] / np.abs(flat[huge]).max() * 1e307  # not 1e307 / tiny
        for i in tiny:
            flat[i] *= 1e-306 / np.abs(flat[i]).max()
    elif profile == "nonfinite":
        X[tuple(rng.integers(n) for n in shape)] = np.inf
        X[tuple(rng.integers(n) for n in shape)] = np.nan
    return X


def simulated(X, kind, inverse, t, axes, norm, ortho, ranks, rng, local_peaks=False):
    """The distributed algorithm without MPI: along each axis, last of ``axes`` first,
    every line goes to a random one of ``ranks`` ranks (as any layout deals them:
    the exchanges only move lines), each rank transforms its lines with the peaks
    of all (or, ``local_peaks``, of its own only)."""
    parts = np.stack([X.real, X.imag]) if np.iscomplexobj(X) else X[None]
    for ax in reversed(axes):
        moved = np.moveaxis(parts, ax + 1, -1)
        lines = moved.reshape(-1, moved.shape[-1])
        owner = rng.integers(ranks, size=len(lines))
        peaks = np.max([range_peaks(lines[owner == r]) for r in range(ranks)], axis=0)
        out = np.empty_like(lines)
        for r in range(ranks):
            mine = lines[owner == r]
            out[owner == r] = transform_lines(mine, range_peaks(mine) if local_peaks
                                              else peaks, kind, t, inverse, norm, ortho)
        parts = np.moveaxis(out.reshape(moved.shape), -1, ax + 1)
    if np.iscomplexobj(X):
        out = np.empty(X.shape, np.complex128)
        out.real, out.imag = parts[0], parts[1]
        return out
    return np.ascontiguousarray(parts[0])


@settings(max_examples=30, deadline=None)
@given(shape=st.tuples(st.sampled_from(LENGTHS), st.sampled_from(LENGTHS),
                       st.sampled_from(LENGTHS + LONG)).flatmap(lambda s: st.permutations(s)
                                                                .map(tuple)),
       kind=st.sampled_from(["dct", "dst"]),
       inverse=st.booleans(), t=st.integers(1, 4), norm=st.sampled_from(NORMS),
       orthogonalize=st.sampled_from([None, False, True]),
       axes=st.permutations([0, 1, 2]), ranks=st.integers(1, 5),
       profile=st.sampled_from(["normal", "range", "range", "nonfinite"]),
       complex_=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_lines_on_any_ranks_with_the_global_peaks_give_the_serial_bits(
        shape, kind, inverse, t, norm, orthogonalize, axes, ranks, profile, complex_, seed):
    rng = np.random.default_rng(seed)
    X = data(rng, shape, profile, complex_)
    before = X.copy()
    want = getattr(fft, FUNCS[kind, inverse])(X, type=t, axes=axes, norm=norm,
                                              orthogonalize=orthogonalize)
    ortho = norm == "ortho" if orthogonalize is None else orthogonalize
    got = simulated(X, kind, inverse, t, axes, norm, ortho, ranks, rng)
    assert same(got, want)
    assert same(X, before)


@pytest.mark.parametrize("kind,inverse", list(FUNCS))
def test_each_rank_needs_the_global_peaks(kind, inverse):
    """With its own peaks only, a rank without the huge line does not scale, and its
    tiny lines keep bits the serial step (scaled, into the subnormals) loses. One step
    (one axis): a later step along another axis adds the huge line's values to every
    tiny one, which then no longer shows in the bits. The lengths are above the direct
    product's (which reads no global value: the next test), odd and even: type I
    mirrored (49, 50), types II and III reduced (Makhoul's 17, half 18), type IV
    mirrored (129) and reduced (half 18)."""
    rng = np.random.default_rng(7)
    shapes = {1: (6, 49, 50), 2: (6, 17, 18), 3: (6, 17, 18), 4: (6, 129, 18)}
    for t, ax in itertools.product((1, 2, 3, 4), (1, 2)):
        lines_last = np.moveaxis(np.empty(shapes[t]), ax, -1).shape  # huge line along ax
        assert reduction(t, lines_last[-1]) in ("mirror", "makhoul", "half")
        X = np.moveaxis(data(rng, lines_last, "range", False), -1, ax)
        want = getattr(fft, FUNCS[kind, inverse])(X, type=t, axes=[ax])
        assert same(simulated(X, kind, inverse, t, [ax], "backward", False, 3, rng), want)
        alone = simulated(X, kind, inverse, t, [ax], "backward", False, 3, rng, True)
        assert not same(alone, want), (t, ax)


@pytest.mark.parametrize("kind,inverse", list(FUNCS))
def test_the_direct_path_needs_no_global_peaks(kind, inverse):
    """At the direct product's lengths a line's bits are its own (no range scale: fast
    mode's shifts are per line): ranks with their own peaks only, on the data that
    needs the global peaks above, give the serial bits. Every type at its longest
    direct length (and odd type IV at 127)."""
    rng = np.random.default_rng(8)
    for t in (1, 2, 3, 4):
        for N in (MAX_DIRECT[t],) + ((MAX_DIRECT_ODD_IV,) if t == 4 else ()):
            assert reduction(t, N) == "direct"
            X = data(rng, (4, 5, N), "range", False)
            want = getattr(fft, FUNCS[kind, inverse])(X, type=t, axes=[2])
            alone = simulated(X, kind, inverse, t, [2], "backward", False, 3, rng, True)
            assert same(alone, want), (t, N)


def test_range_peaks_are_the_largest_finite_magnitudes_per_position():
    L = np.array([[1.0, -5.0, np.inf, np.nan], [-3.0, 2.0, -7.0, np.nan]])
    assert same(range_peaks(L), np.array([3.0, 5.0, 7.0, 0.0]))
    assert same(range_peaks(np.empty((0, 3))), np.zeros(3))
    L = np.array([[-0.0, -2.0]])
    assert same(range_peaks(L), np.array([0.0, 2.0]))  # +0, not -0: an exact maximum


def test_a_rank_without_lines_returns_none():
    out = transform_lines(np.empty((0, 9)), np.ones(9), "dct", 2, False, "backward", False)
    assert out.shape == (0, 9) and out.dtype == np.float64


# --- on a 1 x 1 grid (MPI.COMM_SELF): the functions themselves -----------------------------

@pytest.fixture(scope="module")
def grid():
    MPI = pytest.importorskip("mpi4py.MPI")
    from ozaki.distributed import make_grid
    with make_grid((1, 1), MPI.COMM_SELF) as g:
        yield g


@pytest.mark.parametrize("kind,inverse", list(FUNCS))
def test_every_type_and_norm_on_one_rank(grid, kind, inverse):
    from fft import distributed as dfft
    name = FUNCS[kind, inverse]
    rng = np.random.default_rng(11)
    X = data(rng, (5, 18, 7), "range", False)
    x = dfft.scatter(X, grid)
    before = x.local.copy()
    for t, norm in itertools.product(range(1, 5), NORMS):
        Y, info = getattr(dfft, name)(x, type=t, norm=norm, return_info=True)
        assert Y.split == (1, 2) and Y.local.dtype == np.float64
        assert same(dfft.gather(Y), getattr(fft, name)(X, type=t, norm=norm)), (t, norm)
        assert info.exchanges == [] and info.traffic.by_kind["range"] == (0, 0)
        assert info.seconds["transforms"] > 0
    assert same(x.local, before)


def test_complex_input_and_the_two_exchange_round_trip(grid):
    from fft import distributed as dfft
    rng = np.random.default_rng(12)
    X = data(rng, (17, 4, 16), "normal", True)
    Y = dfft.dstn(dfft.scatter(X, grid), type=3, norm="ortho", orthogonalize=False)
    Yw = fft.dstn(X, type=3, norm="ortho", orthogonalize=False)
    assert Y.local.dtype == np.complex128 and same(dfft.gather(Y), Yw)
    back = dfft.idstn(Y, type=3, axes=(2, 1, 0), norm="ortho", orthogonalize=False)
    assert back.split == (0, 1)
    assert same(dfft.gather(back), fft.idstn(Yw, type=3, axes=(2, 1, 0), norm="ortho",
                                             orthogonalize=False))
    assert np.allclose(dfft.gather(back), X, rtol=0, atol=1e-14 * np.abs(X).max())


def _serial_error(f):
    with pytest.raises(Exception) as exc:
        f()
    return exc.type, str(exc.value)


@pytest.mark.parametrize("kwargs", [dict(type=5), dict(type=2.5), dict(type=0),
                                    dict(norm="sideways"), dict(workers=0)])
def test_bad_arguments_raise_the_serial_error(grid, kwargs):
    from fft import distributed as dfft
    X = np.ones((3, 4, 5))
    kind, text = _serial_error(lambda: fft.dctn(X, **kwargs))
    with pytest.raises(kind, match=re.escape(text)):
        dfft.dctn(dfft.scatter(X, grid), **kwargs)


def test_dct_1_of_one_point_and_bad_axes(grid):
    from fft import distributed as dfft
    X = np.ones((3, 1, 5))
    kind, text = _serial_error(lambda: fft.idctn(X, type=1))
    assert kind is RuntimeError
    with pytest.raises(RuntimeError, match=re.escape(text)):
        dfft.idctn(dfft.scatter(X, grid), type=1)
    assert same(dfft.gather(dfft.dstn(dfft.scatter(X, grid), type=1)), fft.dstn(X, type=1))
    x = dfft.scatter(np.ones((3, 4, 5)), grid)
    with pytest.raises(ValueError, match="permutation"):
        dfft.dstn(x, axes=(0, 1))
    with pytest.raises(TypeError, match="DistributedArray"):
        dfft.dctn(np.ones((3, 4, 5)))


# --- under mpiexec -n 4 ----------------------------------------------------------------

@pytest.mark.slow
def test_r2r_bitwise_equal_to_serial_on_slabs_and_pencils():
    pytest.importorskip("mpi4py")
    import test_distributed as mpi_tests
    if mpi_tests.MPIEXEC is None:
        pytest.skip("mpiexec not found (the mpi extra)")
    for name in ("dctn", "dstn"):  # compile every serial kernel here, not in four ranks
        for t in (1, 2, 3, 4):
            getattr(fft, name)(np.ones((3, 17, 18)), type=t)
    out = mpi_tests.launch("check_fft_r2r.py", timeout=300)
    for grid in ("1x1", "1x4", "2x2", "4x1"):
        assert f"ok grid={grid}" in out
    assert out.count("ok errors") == 3 and "ALL OK" in out

"""fft's tables (correctly rounded roots of unity), factorize and plans."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fft
import ozaki
from fft import tables


def correctly_rounded_roots(N):
    """``exp(-2 pi i j/N)`` at 200 bits, each part rounded once to FP64 (+0.0 for zero)."""
    out = np.empty(N, np.complex128)
    with mpmath.workprec(200):
        for j in range(N):
            t = mpmath.mpf(2 * j) / N
            out[j] = complex(float(mpmath.cospi(t)) + 0.0, float(-mpmath.sinpi(t)) + 0.0)
    return out


@pytest.mark.parametrize("N", [1, 2, 3, 8, 12, 97, 1009, 4096])
def test_roots_correctly_rounded(N):
    W = tables.roots(N)
    want = correctly_rounded_roots(N)
    assert W.shape == (N,) and W.dtype == np.complex128
    bad = np.flatnonzero((W.real != want.real) | (W.imag != want.imag))
    assert bad.size == 0, f"entries {bad[:5]}: {W[bad[:5]]} vs {want[bad[:5]]}"


@pytest.mark.parametrize("N", [1, 2, 3, 4, 8, 12, 97, 1009, 4096, 10 ** 5, 2 ** 17 + 4])
def test_roots_exact_symmetries(N):
    W = tables.roots(N)
    assert W[0] == 1
    if N % 2 == 0:
        assert W[N // 2] == -1
    if N % 4 == 0:
        assert W[N // 4] == -1j and W[3 * N // 4] == 1j
    if N % 8 == 0:  # cos(pi/4) = sin(pi/4): the same double
        assert W[N // 8].real == -W[N // 8].imag
    j = np.arange(1, N)
    assert np.array_equal(W[N - j], np.conj(W[j]))
    for part in (W.real, W.imag):
        assert not np.any(np.signbit(part) & (part == 0)), "negative zero"
    assert np.all(np.abs(W.real) <= 1) and np.all(np.abs(W.imag) <= 1)


def test_tables_are_read_only():
    for T in (tables.roots(12), tables.dft_matrix(6), tables.twiddles(12, 4), tables.chirp(5)):
        assert not T.flags.writeable
        with pytest.raises(ValueError):
            T[0] = 2.0


def test_derived_tables_are_the_roots():
    W12 = tables.roots(12)
    j = np.arange(12)
    assert np.array_equal(tables.dft_matrix(12), W12[np.outer(j, j) % 12])
    assert np.array_equal(tables.twiddles(12, 4), W12[np.outer(np.arange(4), np.arange(3))])
    assert np.array_equal(tables.chirp(6), W12[(np.arange(6) ** 2) % 12])
    with pytest.raises(ValueError, match="does not divide"):
        tables.twiddles(12, 5)


@pytest.mark.parametrize("N", [0, -3, 2 ** 50])
def test_roots_bad_order(N):
    with pytest.raises(ValueError, match="N must be in"):
        tables.roots(N)


def test_cache_is_bounded_and_clears(monkeypatch):
    # the bound is read at each insertion: lowering fft.tables.CACHE_BYTES takes effect
    tables.clear_cache()
    monkeypatch.setattr(tables, "CACHE_BYTES", 3 * 1000 * 16 + 100)
    first = tables.roots(1000)
    assert tables.roots(1000) is first  # cached
    kept = [tables.roots(n) for n in (1001, 1002)]
    assert tables.roots(1000) is first  # three fit; using it makes it the most recent
    tables.roots(1003)  # evicts the least recently used: 1001
    assert tables.table_cache.size <= tables.CACHE_BYTES
    assert tables.roots(1000) is first and tables.roots(1001) is not kept[0]
    assert np.array_equal(tables.roots(1001), kept[0])
    tables.clear_cache()
    assert tables.table_cache.size == 0 and tables.roots(1000) is not first


# --- factorize -----------------------------------------------------------------------------

def is_prime(n):
    return n > 1 and all(n % p for p in range(2, math.isqrt(n) + 1))


@settings(max_examples=200)
@given(st.integers(1, 10 ** 7))
def test_factorize(n):
    radices = fft.factorize(n)
    assert math.prod(radices) == n and radices == sorted(radices)
    for r in radices:
        assert r <= fft.MAX_RADIX or is_prime(r), radices
    assert n == 1 or 1 not in radices
    small = math.prod(r for r in radices if r <= fft.MAX_RADIX)
    fewest = math.ceil(round(math.log(small) / math.log(fft.MAX_RADIX), 9)) if small > 1 else 0
    assert sum(r <= fft.MAX_RADIX for r in radices) >= fewest


@pytest.mark.parametrize("k", range(0, 25))
def test_factorize_powers_of_two_fewest_balanced_stages(k):
    radices = fft.factorize(2 ** k)
    assert math.prod(radices) == 2 ** k
    assert len(radices) == max(1, math.ceil(k / 6))  # 64 = 2**6 is the largest radix
    assert max(radices) <= 2 * min(radices) or k == 0


def splits(n, count, cap):
    """Every split of ``n`` into ``count`` non-increasing factors ``<= cap`` (brute force)."""
    if count == 0:
        return [()] if n == 1 else []
    return [(d,) + rest for d in range(min(cap, n), 0, -1) if n % d == 0
            for rest in splits(n // d, count - 1, d)]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 3 * 10 ** 4))
def test_factorize_fewest_stages_smallest_largest_radix(n):
    small = math.prod(p for p in fft.factorize(n) if p <= fft.MAX_RADIX)
    radices = [r for r in fft.factorize(n) if r <= fft.MAX_RADIX]
    if small == 1:
        return
    assert not splits(small, len(radices) - 1, fft.MAX_RADIX)  # no fewer stages possible
    assert max(radices) == min(max(sp) for sp in splits(small, len(radices), fft.MAX_RADIX))


def test_factorize_balances_mixed_radices():
    assert fft.factorize(3 * 5 * 7 * 64) == [16, 20, 21]
    assert fft.factorize(10 ** 7) == [20, 25, 25, 25, 32]  # 4 factors <= 64 cannot make 10**7


def test_factorize_bad_length():
    with pytest.raises(ValueError):
        fft.factorize(0)


# --- plans -----------------------------------------------------------------------------------

def test_stage_records_per_stage(rng):
    x = rng.standard_normal((3, 4096)) + 1j * rng.standard_normal((3, 4096))
    plan = fft.get_plan(4096)
    with fft.stage_records() as stages:
        fft.fft(x)
    assert [s.radix for s in stages] == plan.radices == [64, 64]
    for s, stage in zip(stages, plan.stages):
        assert s.num_moduli == stage.counts() and s.num_moduli >= 2
        assert s.gemms > 0 and s.form == "complex" and s.columns == 3 * 64
    with fft.stage_records() as stages:
        fft.rfft(x.real, 60)
        fft.irfft(x[:, :31], 60)
    assert [(s.radix, s.form) for s in stages] == [(60, "real-in"), (60, "real-out")]


def test_fixed_num_moduli_is_recorded(rng):
    plan, x = fft.Plan(128, num_moduli=10), rng.standard_normal(128)
    with fft.stage_records() as stages:
        y = fft.fft(x, plan=plan)
    assert [s.num_moduli for s in stages] == [10, 10]
    assert np.linalg.norm(y - np.fft.fft(x)) <= 1e-14 * np.linalg.norm(y)


def test_native_plan_close_to_emulated(rng):
    x = rng.standard_normal((2, 720)) + 1j * rng.standard_normal((2, 720))
    native = fft.Plan(720, native=True)
    with fft.stage_records() as stages:
        y = fft.fft(x, plan=native)
    assert all(s.gemms == 0 for s in stages) and len(stages) == len(native.radices)
    z = fft.fft(x)
    assert np.linalg.norm(y - z) <= 1e-15 * np.linalg.norm(z) * math.sqrt(math.log2(720))


def test_plan_arguments(rng):
    x = rng.standard_normal((6, 8))
    with pytest.raises(ValueError, match="plan is for length 6"):
        fft.fft(x, plan=fft.Plan(6))
    with pytest.raises(TypeError, match="fft.Plan"):
        fft.fft(x, plan="fast")
    p6, p8 = fft.Plan(6), fft.Plan(8)
    # one plan per axis, in the order of axes
    assert np.array_equal(fft.fft2(x, plan=[p6, p8]), fft.fft2(x))
    assert np.array_equal(fft.rfftn(x, axes=(1, 0), plan=[p8, p6]), fft.rfftn(x, axes=(1, 0)))
    with pytest.raises(ValueError, match="the transform has length 8"):  # last axis first
        fft.fft2(x, plan=[p8, p6])
    with pytest.raises(ValueError, match="holds 1 plans for 2 transformed axes"):
        fft.fft2(x, plan=[p8])
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="invalid number of data points"):
            fft.Plan(bad)
    with pytest.raises(ValueError, match="mode"):
        fft.Plan(8, mode="exact")
    with pytest.raises(ValueError, match="num_moduli"):
        fft.Plan(8, num_moduli=99)
    eng = ozaki.get_engine("cpu-blas", "fp64")  # an Engine object, as dgemm takes
    assert np.array_equal(fft.fft(np.arange(8.0), plan=fft.Plan(8, engine=eng)),
                          fft.fft(np.arange(8.0)))


def test_get_plan_caches():
    p = fft.get_plan(48)
    assert fft.get_plan(48) is p and fft.get_plan(np.int64(48)) is p
    q = fft.get_plan(48, native=True)
    assert q is not p and q.options.native and fft.get_plan(48, native=True) is q
    for n in range(1000, 1000 + fft.transforms.PLAN_CACHE_SIZE):  # 48's plans drop out
        fft.get_plan(n, native=True)
    assert fft.get_plan(48) is not p


def test_plan_cache_bounded_in_bytes(monkeypatch):
    monkeypatch.setattr(fft.transforms, "PLAN_CACHE_BYTES", 3 * fft.Plan(2017).nbytes // 2)
    a = fft.get_plan(2017, native=True)
    assert fft.get_plan(2017, native=True) is a
    fft.get_plan(2027, native=True)  # a second large dense prime: the older one drops out
    assert fft.get_plan(2017, native=True) is not a
    assert fft.Plan(2017).nbytes > 100 * fft.Plan(64).nbytes  # the estimate sees the size

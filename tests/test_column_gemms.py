"""The modular products of a single product's column blocks as small GEMMs, and every
modulus in one call (:func:`ozaki.core.products.column_stack_product`,
:func:`ozaki.core.products.moduli_product`): the same exact integers as one
:func:`ozaki.core.products.modular_product` per modulus, so the same result bits,
whatever the width (1 column, widths that do not divide the columns, one column of
``B``), on the pieces' worker threads or not."""

from __future__ import annotations

import numpy as np
import pytest

import ozaki
from ozaki.backends import get_backend
from ozaki.core import pipeline, products
from ozaki.core.moduli import MODULI
from validation.reference import test_matrix

import fft


def same_bits(X, Y):
    X, Y = np.asarray(X), np.asarray(Y)
    return X.shape == Y.shape and X.dtype == Y.dtype and np.array_equal(
        np.ascontiguousarray(X).view(np.int64), np.ascontiguousarray(Y).view(np.int64))


def residues(rng, moduli, shape):
    """Symmetric residues of each modulus, extremes included, as FP64 planes (N,) + shape."""
    planes = []
    for p in moduli:
        h = p // 2
        x = rng.integers(-h, h - (p % 2 == 0) + 1, size=shape).astype(np.float64)
        x.reshape(-1)[:2] = (-h, h - (p % 2 == 0))  # the range's ends
        planes.append(x)
    return np.stack(planes)


@pytest.mark.parametrize("n", [1, 7, 64, 100])
@pytest.mark.parametrize("width", [1, 3, 16, 64, 1000])
def test_column_blocks_and_all_moduli_give_each_modulus_product(n, width):
    rng = np.random.default_rng(n * 1000 + width)
    engine = ozaki.get_engine("cpu-blas")
    backend = get_backend()
    moduli = MODULI["fp64"][:6]
    m, k = 12, 10
    RA = residues(rng, moduli, (1, m, k))
    RB = residues(rng, moduli, (1, k, n))
    want = np.stack([products.modular_product(backend, engine, RA[q], RB[q], p)
                     for q, p in enumerate(moduli)])
    assert np.array_equal(want[0, 0], RA[0, 0] @ RB[0, 0])  # exact integers below 2**53
    for q, p in enumerate(moduli):
        got = np.full((1, m, n), np.nan)
        products.column_stack_product(backend, engine, RA[q], RB[q], p, got, width)
        assert same_bits(got, want[q])
    got = np.full((len(moduli), 1, m, n), np.nan)
    assert products.moduli_product(engine, RA, RB, moduli, got, width) is got
    assert same_bits(got, want)
    # width 0: every modulus whole, in one call
    got[...] = np.nan
    products.moduli_product(engine, RA, RB, moduli, got)
    assert same_bits(got, want)


def test_all_moduli_decline_digits_and_k_blocks():
    # FP8 digits (three GEMMs a modulus) or products blocked over k need a call per
    # modulus: moduli_product then writes nothing and says so
    rng = np.random.default_rng(5)
    engine = ozaki.get_engine("cpu-blas")
    moduli = MODULI["fp8"][:4]
    RA, RB = residues(rng, moduli, (1, 3, 4)), residues(rng, moduli, (1, 4, 5))
    want = np.stack([RA[q] @ RB[q] for q in range(4)])
    out = np.full((4, 1, 3, 5), np.nan)
    assert products.moduli_product(engine, RA, RB, moduli, out) is out  # FP64: direct
    assert same_bits(out, want)
    blocked = type(engine)(max_kblock=2)  # k = 4 in two k-blocks, reduced per modulus
    digits = ozaki.get_engine("cpu-fp8")  # residues above 16 in digits
    assert all(products.uses_digits(digits, p) for p in moduli)
    for other in (blocked, digits):
        out[...] = np.nan
        assert products.moduli_product(other, RA, RB, moduli, out) is None
        assert np.isnan(out).all()


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("columns", [1, 5, 512, 3001])
@pytest.mark.parametrize("gemm_columns", [1, 7, None])
def test_column_blocks_on_worker_threads_keep_the_bits(columns, gemm_columns, order,
                                                       monkeypatch):
    # a small prepared A (an FFT stage's matrix) against a wide B (C or Fortran order)
    # in 512-column blocks on two worker threads, each block's GEMMs gemm_columns wide
    # (None: the default), gives the bits of the whole product run on the calling thread
    rng = np.random.default_rng(columns)
    A = np.asarray(test_matrix(16, 16, 2.0, rng), order=order)
    B = np.asarray(test_matrix(16, columns, 2.0, rng), order=order)
    if columns > 2000:
        B[3, 1500] = np.inf           # a special value and
        B[:, 1700] *= 1e-200          # a column far below the others in a later block
    P = ozaki.prepare(A, keep_residues=True)
    kw = dict(scheme="fp64", mode="fast", engine="cpu-blas", fallback="exact",
              bounds=True, return_info=True)
    monkeypatch.setattr(pipeline, "piece_threads", lambda *a: 1)
    monkeypatch.setattr(pipeline, "column_block", lambda A, m, k, n, N: n)
    whole, wi = ozaki.dgemm(A, B, **kw)
    seen = []  # (whether every modulus went in one call, GEMM width) per call
    all_moduli, per_modulus = products.moduli_product, products.column_stack_product

    def spy_all(engine, RA, RB, moduli, out, width=0):
        seen.append(("all", width))
        return all_moduli(engine, RA, RB, moduli, out, width)

    def spy_one(backend, engine, ra, rb, p, out, width):
        seen.append(("one", width))
        return per_modulus(backend, engine, ra, rb, p, out, width)

    monkeypatch.setattr("ozaki.core.passes.moduli_product", spy_all)
    monkeypatch.setattr("ozaki.core.passes.column_stack_product", spy_one)
    monkeypatch.setattr(pipeline, "piece_threads", lambda *a: 2)
    monkeypatch.setattr(pipeline, "column_block", lambda A, m, k, n, N: min(n, 512))
    if gemm_columns is not None:
        monkeypatch.setattr(pipeline, "serial_columns", lambda m, k: gemm_columns)
    for _ in range(2):  # the prepared A's kept planes serve the second call
        for left in (A, P):
            got, gi = ozaki.dgemm(left, B, **kw)
            assert same_bits(got, whole) and same_bits(gi.error_bound, wi.error_bound)
            assert gi.fallback_entries == wi.fallback_entries
    # blocks (A's planes formed once): all moduli in one call; one block: per modulus
    assert set(seen) == {("all" if columns > 512 else "one",
                          gemm_columns or products.serial_columns(16, 16))}


def test_fft_stages_with_one_column_gemms_keep_the_bits(monkeypatch):
    # every stage product of a 1-D and a 3-D transform, its GEMMs one column wide,
    # gives the bits of the default plans
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1 << 14) + 1j * rng.standard_normal(1 << 14)
    y = rng.standard_normal((16, 32, 64)) + 1j * rng.standard_normal((16, 32, 64))
    plans = [fft.Plan(1 << 14)] + [fft.Plan(n) for n in y.shape]
    want = fft.fft(x, plan=plans[0]), fft.fftn(y, plan=plans[1:])
    monkeypatch.setattr(type(get_backend()), "pass_threads", lambda self: 2)
    monkeypatch.setattr(pipeline, "column_block", lambda A, m, k, n, N: min(n, 512))
    widths = []
    all_moduli = products.moduli_product

    def spy(engine, RA, RB, moduli, out, width=0):
        widths.append(width)
        return all_moduli(engine, RA, RB, moduli, out, width)

    monkeypatch.setattr("ozaki.core.passes.moduli_product", spy)
    for cols in (1, 3):
        monkeypatch.setattr(pipeline, "serial_columns", lambda m, k: cols)
        got = fft.fft(x, plan=plans[0]), fft.fftn(y, plan=plans[1:])
        assert same_bits(got[0], want[0]) and same_bits(got[1], want[1])
    assert set(widths) == {1, 3}  # the stages went through column blocks on the workers


@pytest.mark.parametrize("scheme,engine", [("int8", "cpu-onednn"), ("int7", "cpu-onednn"),
                                           ("int8", "cpu-int8"), ("fp8", "cpu-blas")])
def test_all_moduli_in_one_call_keep_the_bits_on_other_engines(scheme, engine, monkeypatch):
    # int8 planes and INT32 products (oneDNN, the int8 unit), FP8 digits: one call for
    # every modulus where it can be, else one per modulus; the bits of the calls per
    # modulus either way
    if not ozaki.get_engine(engine).available():
        pytest.skip(f"{engine} is not available here")
    rng = np.random.default_rng(11)
    x = rng.standard_normal(1 << 14) + 1j * rng.standard_normal(1 << 14)
    plan = fft.Plan(1 << 14, scheme=scheme, engine=engine)  # stages of 1024 columns
    monkeypatch.setattr(type(get_backend()), "pass_threads", lambda self: 2)
    monkeypatch.setattr(pipeline, "column_block", lambda A, m, k, n, N: min(n, 512))
    calls = []
    all_moduli = products.moduli_product

    def spy(*args, **kw):
        got = all_moduli(*args, **kw)
        calls.append(got is not None)
        return got

    monkeypatch.setattr("ozaki.core.passes.moduli_product", spy)
    got = fft.fft(x, plan=plan)
    monkeypatch.setattr("ozaki.core.passes.moduli_product", lambda *a, **k: None)
    want = fft.fft(x, plan=plan)
    assert same_bits(got, want)
    assert calls and all(calls) == (scheme != "fp8" or engine == "cpu-blas")

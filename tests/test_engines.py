"""Invariant: for fixed (scheme, num_moduli, mode) every engine, thread count and
k-block gives bitwise identical results."""

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import ozaki
from ozaki.backends.cpu import parallel
from ozaki.backends.engines import BlasEngine, Engine, FP8Engine, Int8Engine, get_engine
from ozaki.backends.onednn import OneDNNEngine
from validation.reference import test_matrix


def bits(C):
    return C.view(np.int64)


ENGINES = {
    "int8": [BlasEngine(), Int8Engine(), BlasEngine(max_kblock=64), Int8Engine(max_kblock=31)],
    "fp8": [BlasEngine(), FP8Engine(), Int8Engine(), FP8Engine(max_kblock=100),
            BlasEngine(max_kblock=17)],
    "fp64": [BlasEngine(), BlasEngine(max_kblock=128), BlasEngine(max_kblock=1)],
}


@pytest.mark.parametrize("scheme", list(ENGINES))
@pytest.mark.parametrize("mode", ["accurate", "fast"])
@pytest.mark.parametrize("phi", [0.5, 2.0, 4.0])
def test_bitwise_identical_across_engines_threads_and_blocks(scheme, mode, phi, rng):
    A = test_matrix(13, 300, phi, rng)
    B = test_matrix(300, 11, phi, rng)
    n = {"int8": 14, "fp8": 11, "fp64": 5}[scheme]  # below FP64 grade: every bit matters
    ref = None
    for eng in ENGINES[scheme]:
        for threads in (1, 2, 3):
            with parallel.limit(threads), threadpool_limits(threads):
                C = ozaki.dgemm(A, B, scheme=scheme, num_moduli=n, mode=mode, engine=eng)
            if ref is None:
                ref = C
            assert np.array_equal(bits(C), bits(ref)), (eng, threads)


def test_fp8_engine_checks_operands_are_e4m3():
    eng = FP8Engine()
    with pytest.raises(ValueError, match="operands up to 16"):
        eng.matmul(np.full((2, 2), 17.0), np.ones((2, 2)), 17, 1)
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        eng.matmul(np.full((2, 2), 0.3), np.ones((2, 2)), 1, 1)


def test_int8_engine_checks_range():
    with pytest.raises(ValueError, match="int8 range"):
        Int8Engine().matmul(np.full((2, 2), 128.0), np.ones((2, 2)), 128, 1)


@pytest.mark.parametrize("eng", [BlasEngine(), FP8Engine(), Int8Engine(), FP8Engine(max_kblock=3)])
def test_engine_matmul_exact_on_the_limit(eng, rng):
    """Operands at the engine's extremes, k at its block limit: still exact."""
    top = min(eng.operand_max, 16 if isinstance(eng, FP8Engine) else 127)
    k = min(eng.kblock(top, top) * 2 + 1, 5000)
    X = rng.choice([-top, top], size=(3, k)).astype(float)
    Y = rng.choice([-top, top], size=(k, 4)).astype(float)
    want = X.astype(np.int64) @ Y.astype(np.int64)
    assert np.array_equal(eng.matmul(X, Y, top, top), want)


def test_fp8_accumulator_block_is_65536_for_digits():
    assert FP8Engine().kblock(16, 16) == 65536
    assert Int8Engine().kblock(128, 128) == 2 ** 17 - 1


def test_available_engines_and_resolution():
    names = ozaki.available_engines()
    assert {"cpu-blas", "cpu-fp8", "cpu-int8"} <= set(names)
    assert isinstance(get_engine("auto", "fp64"), BlasEngine)
    with pytest.raises(ValueError, match="does not run scheme 'int8'"):
        get_engine("cpu-fp8", "int8")
    with pytest.raises(ValueError, match="engine must be one of"):
        get_engine("tpu", "fp8")
    with pytest.raises(ValueError, match="max_kblock"):
        BlasEngine(max_kblock=0)
    assert issubclass(FP8Engine, Engine)


def test_scheme_auto_follows_simulation_engine(rng):
    A = test_matrix(4, 20, 1.0, rng)
    _, info = ozaki.dgemm(A, A.T, engine="cpu-fp8", return_info=True)
    assert info.scheme == "fp8" and info.engine == "cpu-fp8"
    assert np.all(A != 0)  # no zero: the refinement needs one bound GEMM, G'
    assert info.gemms == 3 * info.num_moduli + 1 + (1 if info.refined_block != (0, 0) else 0)
    # both "auto": the machine's fastest path for the mode: int8 on cpu-onednn where
    # oneDNN has VNNI; without it int7 on cpu-onednn in fast mode where its narrow
    # encoding is exact; else fp64 on cpu-blas
    one = OneDNNEngine()
    vnni = one.available() and one.encoding == "offset"
    narrow = one.available() and not vnni and one.encoding_for(64) == "offset"
    onednn, blas = ("int8", "cpu-onednn"), ("fp64", "cpu-blas")
    _, info = ozaki.dgemm(A, A.T, mode="fast", return_info=True)
    assert (info.scheme, info.engine) == (onednn if vnni else ("int7", "cpu-onednn")
                                          if narrow else blas)
    _, info = ozaki.dgemm(A, A.T, return_info=True)
    assert (info.scheme, info.engine) == (onednn if vnni else blas)
    # an explicit scheme: the fastest engine that runs it (the bits are the scheme's)
    _, info = ozaki.dgemm(A, A.T, scheme="int8", return_info=True)
    assert info.engine == ("cpu-onednn" if one.available() else "cpu-blas")
    _, info = ozaki.dgemm(A, A.T, scheme="fp64", return_info=True)
    assert info.engine == "cpu-blas"


def test_concurrent_python_threads_give_the_same_bits(rng):
    A = test_matrix(40, 200, 1.0, rng)
    B = test_matrix(200, 30, 1.0, rng)
    want = ozaki.dgemm(A, B, scheme="int8")
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                results.append(ozaki.dgemm(A, B, scheme="int8"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 12
    assert all(np.array_equal(bits(C), bits(want)) for C in results)


@pytest.mark.parametrize("eng, k, amax", [
    (eng, k, amax)
    for eng in (BlasEngine(), FP8Engine(), Int8Engine(), BlasEngine(max_kblock=7))
    for k, amax in ((0, 16), (1, 16), (1024, 128), (1025, 128), (70000, 16), (300, 2 ** 20))
    if amax <= eng.operand_max])
def test_blocks_partition_k_within_the_accumulator(eng, k, amax):
    blocks = eng.blocks(k, amax, amax)
    assert sum(length for length, _ in blocks) == k
    assert len(blocks) == max(1, -(-k // eng.kblock(amax, amax)))
    for length, bound in blocks:
        assert bound == length * amax * amax <= eng.accumulator_max
        # only cpu-blas has a second (FP32) path, taken exactly when FP32 holds the bound
        assert eng.fp32(bound) == (isinstance(eng, BlasEngine) and bound <= 2 ** 24)


def test_blas_fp32_path_exact_on_its_limit(rng):
    """k h**2 = 2**24 exactly (k = 1024, |x| = 128): SGEMM, and still exact."""
    eng = BlasEngine()
    assert eng.fp32(1024 * 128 * 128)
    X = rng.choice([-128.0, 128.0], size=(5, 1024))
    Y = rng.choice([-128.0, 128.0], size=(1024, 6))
    Y[:, 0] = np.sign(X[0])  # an entry at the bound itself
    Y[:, 0] *= 128.0
    want = X.astype(np.int64) @ Y.astype(np.int64)
    assert want[0, 0] == 2 ** 24
    assert np.array_equal(eng.matmul(X, Y, 128, 128), want)


@pytest.mark.parametrize("eng, amax", [(BlasEngine(), 128), (BlasEngine(max_kblock=100), 128),
                                       (FP8Engine(), 16), (FP8Engine(max_kblock=7), 16),
                                       (Int8Engine(), 127), (Int8Engine(max_kblock=5), 127)])
def test_float32_out_exact_on_its_limit_and_refused_beyond(eng, amax, rng):
    """A float32 ``out`` takes products with ``k amax bmax <= 2**24`` (every partial
    sum an integer FP32 holds), whatever the engine's blocks; beyond, a clear error."""
    k = 2 ** 24 // (amax * amax)
    X = rng.choice([-amax, amax], size=(2, 3, k)).astype(np.float64)
    Y = rng.choice([-amax, amax], size=(1, k, 4)).astype(np.float64)
    Y[0, :, 0] = np.sign(X[0, 0]) * amax  # an entry on the bound itself
    want = np.matmul(X.astype(np.int64), Y.astype(np.int64))
    assert want[0, 0, 0] == k * amax * amax
    out = np.full((2, 3, 8), np.nan, np.float32)
    assert eng.matmul(X, Y, amax, amax, out=out[..., ::2]).dtype == np.float32
    assert np.array_equal(out[..., ::2], want) and np.isnan(out[..., 1::2]).all()
    with pytest.raises(ValueError, match="float32 out"):
        eng.matmul(np.concatenate([X, X[..., :1]], -1), np.concatenate([Y, Y[:, :1]], 1),
                   amax, amax, out=out[..., :4])


@pytest.mark.parametrize("xs,ys", [((1, 64, 64), (1, 64, 20000)), ((3, 40, 30), (1, 30, 50)),
                                   ((1, 40, 30), (5, 30, 50)), ((2, 700, 30), (2, 30, 900)),
                                   ((700, 30), (30, 900)), ((2, 3, 5, 4), (2, 3, 4, 6)),
                                   ((1, 1000, 64), (1, 64, 1000)), ((4, 300, 8), (1, 8, 2000)),
                                   ((3, 1, 70, 9), (1, 2, 9, 80))])
def test_blas_fp32_path_in_tiles_is_exact_into_strided_out(rng, xs, ys, monkeypatch):
    """The FP32 path runs a tile of the product at a time (small tiles here, so that
    batches, rows and columns are all cut) and converts each into ``out``, which
    may be a strided view; the result is the exact integer product."""
    import ozaki.backends.engines as engines
    tiles = engines._tiles
    monkeypatch.setattr(engines, "_tiles", lambda shape, size: tiles(shape, 4096))
    eng = BlasEngine()
    X = rng.integers(-511, 512, xs).astype(np.float32)
    Y = rng.integers(-511, 512, ys).astype(np.float32)
    want = np.matmul(X.astype(np.int64), Y.astype(np.int64))
    assert eng.fp32(xs[-1] * 511 * 511)
    assert np.array_equal(eng.matmul(X, Y, 511, 511), want)
    wide = np.full(want.shape[:-1] + (2 * want.shape[-1],), np.nan)
    view = wide[..., ::2]  # every other column: a strided destination
    assert eng.matmul(X, Y, 511, 511, out=view) is view
    assert np.array_equal(view, want) and np.isnan(wide[..., 1::2]).all()


class _Recording(BlasEngine):
    """cpu-blas that records each call's (k, amax, bmax)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def matmul(self, X, Y, amax, bmax, out=None):
        self.calls.append((X.shape[-1], amax, bmax))
        return super().matmul(X, Y, amax, bmax, out=out)


@pytest.mark.parametrize("scheme, mode, k", [("int8", "fast", 64), ("int8", "accurate", 1100),
                                             ("fp8", "accurate", 64), ("fp64", "fast", 5000),
                                             ("fp64", "accurate", 300)])
def test_exact_gemms_lists_the_calls_dgemm_makes(scheme, mode, k, rng):
    from ozaki import exact_gemms

    A, B = rng.standard_normal((3, k)), rng.standard_normal((k, 4))
    eng = _Recording()
    _, info = ozaki.dgemm(A, B, scheme=scheme, mode=mode, engine=eng, num_moduli=8 if scheme != "fp64" else 5,
                          fallback="none", return_info=True)
    assert eng.calls == exact_gemms(k, scheme=scheme, num_moduli=info.num_moduli, mode=mode, engine=eng)
    if k <= 4096:  # no k-blocks: one entry per GEMM that info counts
        assert len(eng.calls) == info.gemms
    with pytest.raises(ValueError, match="info.num_moduli"):
        exact_gemms(k, scheme=scheme, num_moduli="auto")


def test_exact_gemms_fp8_digits_on_the_fp8_engine(rng):
    from ozaki import exact_gemms

    calls = exact_gemms(100, scheme="fp8", num_moduli=13, mode="accurate", engine="cpu-fp8")
    assert len(calls) == 3 * 13 + 1 and calls[1:] == [(100, 16, 16)] * 39


@pytest.mark.parametrize("scheme", list(ENGINES))
def test_product_bound_holds_on_extreme_residues(scheme, rng):
    """``product_bound`` bounds every modular product, k-blocked or not; with it
    the fp64 primes' products up to k = 2048 take the one-step reduction."""
    from ozaki.backends import get_backend
    from ozaki.core.moduli import MODULI, half_range
    from ozaki.core.products import modular_product, product_bound, product_kblock
    backend = get_backend()
    for eng in ENGINES[scheme]:
        for p in MODULI[scheme][:: 5]:
            lo, hi = half_range(p)
            kb = product_kblock(eng, p)
            for k in sorted({1, 7, min(kb, 300), min(2 * kb + 1, 300)}):
                bound = product_bound(eng, p, k)
                assert bound <= 2 ** 53
                for ra, rb in [(np.full((2, k), lo), np.full((k, 3), lo)),
                               (rng.choice([lo, hi], (2, k)), rng.choice([lo, hi], (k, 3))),
                               (rng.integers(lo, hi, (2, k), endpoint=True),
                                rng.integers(lo, hi, (k, 3), endpoint=True))]:
                    C = modular_product(backend, eng, ra.astype(float), rb.astype(float), p)
                    assert np.abs(C).max() <= bound, (eng, p, k)
                    want = (ra.astype(object) @ rb.astype(object)) % p
                    assert ((C.astype(np.int64) - want.astype(np.int64)) % p == 0).all()
    if scheme == "fp64":
        assert all(product_bound(BlasEngine(), p, 2048) <= 2 ** 52 for p in MODULI["fp64"])
        assert product_bound(BlasEngine(), MODULI["fp64"][0], 4096) > 2 ** 52


def test_set_scheme_pins_the_machine_choice_on_the_calling_thread(rng):
    """``ozaki.set_scheme`` pins what scheme="auto" with engine="auto" runs, in the block
    and on the calling thread only (``ozaki.get_scheme`` says which); named schemes and
    engines are unaffected."""
    A = test_matrix(40, 300, 1.0, rng)
    B = test_matrix(300, 30, 1.0, rng)
    free = ozaki.dgemm(A, B, mode="fast", return_info=True)[1].scheme
    seen = {}

    def other():
        seen["other"] = ozaki.dgemm(A, B, mode="fast", return_info=True)[1].scheme
        seen["pin"] = ozaki.get_scheme()

    for pin in ozaki.SCHEMES:
        with ozaki.set_scheme(pin):
            C, info = ozaki.dgemm(A, B, mode="fast", return_info=True)
            assert info.scheme == pin
            assert np.array_equal(C, ozaki.dgemm(A, B, mode="fast", scheme=pin,
                                                 engine="cpu-blas"))
            assert ozaki.dgemm(A, B, engine="cpu-fp8", return_info=True)[1].scheme == "fp8"
            assert ozaki.dgemm(A, B, scheme="fp64", return_info=True)[1].scheme == "fp64"
            assert ozaki.get_scheme() == pin
            t = threading.Thread(target=other)
            t.start()
            t.join()
            assert seen.pop("other") == free  # another thread keeps the machine's choice
            assert seen.pop("pin") is None  # and sees no pin
            with ozaki.set_scheme("fp64"):  # nested blocks restore the outer pin
                assert ozaki.dgemm(A, B, mode="fast", return_info=True)[1].scheme == "fp64"
                assert ozaki.get_scheme() == "fp64"
            assert ozaki.dgemm(A, B, mode="fast", return_info=True)[1].scheme == pin
            assert ozaki.get_scheme() == pin
    assert ozaki.dgemm(A, B, mode="fast", return_info=True)[1].scheme == free
    assert ozaki.get_scheme() is None
    for bad in ("auto", "fp32", None):
        with pytest.raises(ValueError, match="scheme"):
            ozaki.set_scheme(bad)


def _wide(m=200, k=128, n=200, spread=80):
    """Column exponents of ``A`` and row exponents of ``B`` spread over 2**+-spread: more
    range than int8's 20 moduli (about 160 bits) certify everywhere in accurate mode,
    and within fp64's (about 430 bits) for these seeded entries."""
    rng = np.random.default_rng(2)
    A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-spread, spread, (1, k)))
    B = rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread, (k, 1)))
    return A, B


@pytest.mark.parametrize("engine_avail", [True, False])
def test_the_machines_int8_widens_to_fp64_where_it_cannot_certify(engine_avail, rng,
                                                                     monkeypatch):
    """Where the machine chose int8, a product int8 cannot certify runs the fp64 scheme
    (its bits, on its engine); typical products, pinned schemes and named engines keep
    int8; the NumPy reference and the distributed product widen alike."""
    from ozaki.api import arguments
    from ozaki.backends import engines
    monkeypatch.setattr(arguments, "machine_scheme", lambda mode: "int8")
    if not engine_avail:  # the int8 scheme on cpu-blas: the same decision, other engine
        monkeypatch.setattr(engines.OneDNNEngine, "available", lambda self: False)
    A, B = _wide()
    for mode in ("accurate", "fast"):
        C, info = ozaki.dgemm(A, B, mode=mode, return_info=True)
        _, pinned = ozaki.dgemm(A, B, mode=mode, scheme="int8", return_info=True)
        assert pinned.uncertified or mode == "fast"
        if pinned.uncertified:  # accurate mode: int8 leaves entries to the fallback
            assert (info.scheme, info.engine, info.uncertified) == ("fp64", "cpu-blas", 0)
        else:  # fast mode's normwise target: int8 certifies them itself
            assert info.scheme == "int8"
        want = ozaki.dgemm(A, B, mode=mode, scheme=info.scheme)
        assert np.array_equal(C, want)
        with ozaki.set_backend("numpy"):
            assert np.array_equal(ozaki.dgemm(A, B, mode=mode), want)
        Z = ozaki.zgemm(A + 0.5j * A, B - 1j * B, mode=mode)
        assert np.array_equal(Z, ozaki.zgemm(A + 0.5j * A, B - 1j * B, mode=mode,
                                             scheme=ozaki.zgemm(A + 0.5j * A, B - 1j * B,
                                                                mode=mode,
                                                                return_info=True)[1].scheme))
    _, info = ozaki.dgemm(A, B, return_info=True)
    assert info.scheme == "fp64"
    with ozaki.set_scheme("int8"):  # pinned: no widening, the fallback does its work
        _, info = ozaki.dgemm(A, B, return_info=True)
        assert info.scheme == "int8" and info.fallback_entries > 0
    for kw in (dict(scheme="int8"), dict(num_moduli=20)):  # named: no widening
        assert ozaki.dgemm(A, B, return_info=True, **kw)[1].scheme == "int8"
    typical = rng.standard_normal((200, 128)), rng.standard_normal((128, 200))
    assert ozaki.dgemm(*typical, return_info=True)[1].scheme == "int8"


def test_the_distributed_product_widens_as_serial(rng, monkeypatch):
    MPI = pytest.importorskip("mpi4py.MPI")
    from ozaki import distributed as D
    from ozaki.api import arguments
    monkeypatch.setattr(arguments, "machine_scheme", lambda mode: "int8")
    A, B = _wide()
    with ozaki.set_small_products(False):
        C, info = ozaki.dgemm(A, B, return_info=True)
        grid = D.make_grid((1, 1), MPI.COMM_SELF)
        dC, dinfo = D.dgemm(D.scatter(A, grid), D.scatter(B, grid), return_info=True)
    assert info.scheme == dinfo.scheme == "fp64"
    assert np.array_equal(D.gather(dC), C)


def test_fft_plans_keep_the_scheme_auto_stood_for():
    """A plan resolves "auto" when it is made (fast mode: the machine's scheme, or the
    thread's set_scheme) and keeps it; the plan cache never hands a plan made for one
    scheme to a call that resolves another."""
    import fft
    x = np.random.default_rng(3).standard_normal((8, 1024))
    free = fft.get_plan(1024)
    assert free.options.scheme == "fp64"  # "auto" as accurate-mode products resolve it
    assert fft.get_plan(1024, engine="cpu-fp8").options.scheme == "fp8"
    with ozaki.set_scheme("fp64"):
        pinned = fft.get_plan(1024)
        assert pinned.options.scheme == "fp64" and fft.get_plan(1024) is pinned
        inside = fft.fft(x)
    assert fft.get_plan(1024) is free
    assert np.array_equal(inside, fft.fft(x, plan=fft.Plan(1024, scheme="fp64")))
    for pin in ("int8", "fp8"):
        with ozaki.set_scheme(pin):
            assert fft.get_plan(1024).options.scheme == pin

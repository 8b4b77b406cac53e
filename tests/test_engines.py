"""Invariant: for fixed (scheme, num_moduli, mode) every engine, thread count and
k-block gives bitwise identical results."""

import threading

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import ozaki
from ozaki.engines import BlasEngine, Engine, FP8Engine, Int8Engine, get_engine
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
    before = numba.get_num_threads()
    try:
        for eng in ENGINES[scheme]:
            for threads in (1, 2):
                numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
                with threadpool_limits(threads):
                    C = ozaki.dgemm(A, B, scheme=scheme, num_moduli=n, mode=mode, engine=eng)
                if ref is None:
                    ref = C
                assert np.array_equal(bits(C), bits(ref)), (eng, threads)
    finally:
        numba.set_num_threads(before)


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
    assert info.gemms == 3 * info.num_moduli + 1 + (2 if info.refined_block != (0, 0) else 0)
    _, info = ozaki.dgemm(A, A.T, return_info=True)
    assert info.scheme == "fp64" and info.engine == "cpu-blas"


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

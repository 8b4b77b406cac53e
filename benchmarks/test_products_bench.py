"""pytest-benchmark suite: stacked, shared-operand and complex products against numpy.

Run with ``make bench`` (all of ``benchmarks/``) or
``pytest benchmarks/test_products_bench.py --benchmark-enable``. Each case times
the emulated call and its native baseline alternately in the same session
(median over the rounds after one warm-up) and records the ratio in
``extra_info``, next to the goal it is measured against:

==================================  ==========================  ======
case                                baseline                    goal
==================================  ==========================  ======
``(8192, 32, 32) @ (8192, 32, 32)``  ``np.matmul``               12x
``(256, 128, 128) @ (256, 128, 128)``  ``np.matmul``             12x
``(64, 64) @ (64, 2**20)``           numpy ``@``                 10x
``zgemm`` n = 2048                   4 real ``dgemm`` calls      0.8x
``(8, 8) @ (8, 8)``                  (a call's time)             20 us
``(32, 32) @ (32, 32)``              numpy ``@``                 20x
``(200, 200) @ (200, 200)``          numpy ``@``                 8x
==================================  ==========================  ======

The last three are small products with the default options: the small-product path
(:mod:`ozaki.core.compensated`), timed over blocks of calls in rotation with blocks of
numpy calls (2000, 1000 and 100 calls: after a two-thread numpy GEMM OpenBLAS's
threads spin for a while and hold a core, which a single call right after it pays;
``extra_info["path"]`` says which path ran). The stacks above take it too (each slice is small); their
``path`` says so.

(The certified count, ``mode="accurate"``; the shared-operand case also in fast
mode. The stacks run the fp64 scheme; the shared-operand and ``zgemm`` cases run the
fp64 scheme on ``cpu-blas`` and the int8 scheme on ``cpu-onednn`` where it is
installed, ``extra_info`` naming the scheme, the engine and the instruction set.)
``OZAKI_BENCH_SMALL=1`` shrinks every case 8-16x for a quick look.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ozaki
from bench_common import isa, rotate  # benchmarks/ (conftest puts it on the path)

SMALL = os.environ.get("OZAKI_BENCH_SMALL") == "1"


def _record(benchmark, name, te, tn, goal, info=None):
    benchmark.group = "products"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    ratio = te / tn
    benchmark.extra_info.update(case=name, emulated_s=te, baseline_s=tn, ratio=ratio, goal=goal,
                                meets_goal=bool(ratio <= goal))
    if info is not None:
        benchmark.extra_info.update(num_moduli=int(info.num_moduli), gemms=int(info.gemms),
                                    path=info.path, scheme=info.scheme, engine=info.engine,
                                    isa=isa()["summary"],
                                    seconds={k: float(v) for k, v in info.seconds.items()})


STACKS = [(8192, 32), (256, 128)] if not SMALL else [(512, 32), (32, 128)]
#: (scheme, engine) of the cases measured on both CPU engines.
PATHS = [("fp64", "cpu-blas"), ("int8", "cpu-onednn")]


def _path(scheme, engine) -> dict:
    if engine not in ozaki.available_engines():
        pytest.skip(f"engine {engine} is not available here")
    return dict(scheme=scheme, engine=engine)


@pytest.mark.parametrize("batch,size", STACKS, ids=lambda v: str(v))
def test_stacked_matmul(benchmark, rounds, batch, size):
    rng = np.random.default_rng(batch * size)
    A = rng.standard_normal((batch, size, size))
    B = rng.standard_normal((batch, size, size))
    info = ozaki.matmul(A, B, scheme="fp64", return_info=True)[1]
    te, tn = rotate([lambda: ozaki.matmul(A, B, scheme="fp64"), lambda: np.matmul(A, B)],
                    rounds)
    _record(benchmark, f"stack {batch}x{size}^3", te, tn, 12.0, info)


@pytest.mark.parametrize("scheme,engine", PATHS, ids=lambda v: str(v))
@pytest.mark.parametrize("mode", ["accurate", "fast"])
def test_shared_operand(benchmark, rounds, mode, scheme, engine):
    kw = dict(mode=mode, **_path(scheme, engine))
    cols = 2 ** 20 if not SMALL else 2 ** 16
    rng = np.random.default_rng(7)
    A = rng.standard_normal((64, 64))
    B = rng.standard_normal((64, cols))
    info = ozaki.dgemm(A, B, return_info=True, **kw)[1]
    te, tn = rotate([lambda: ozaki.dgemm(A, B, **kw), lambda: A @ B], rounds)
    _record(benchmark, f"(64, 64) @ (64, {cols}) {mode} {scheme}/{engine}", te, tn, 10.0,
            info)


@pytest.mark.parametrize("scheme,engine", PATHS, ids=lambda v: str(v))
def test_zgemm_against_four_dgemm(benchmark, rounds, scheme, engine):
    kw = _path(scheme, engine)
    size = 2048 if not SMALL else 256
    rng = np.random.default_rng(9)
    A = rng.standard_normal((size, size)) + 1j * rng.standard_normal((size, size))
    B = rng.standard_normal((size, size)) + 1j * rng.standard_normal((size, size))
    C, info = ozaki.zgemm(A, B, return_info=True, **kw)
    N = info.num_moduli
    parts = [(A.real, B.real), (A.imag, B.imag), (A.real, B.imag), (A.imag, B.real)]

    def four():
        for X, Y in parts:
            ozaki.dgemm(X, Y, num_moduli=N, **kw)

    te, tn = rotate([lambda: ozaki.zgemm(A, B, num_moduli=N, **kw), four], rounds)
    _record(benchmark, f"zgemm n={size} vs 4 dgemm at N={N} {scheme}/{engine}", te, tn, 0.8,
            info)


SMALL_PRODUCTS = [(8, 2000, None), (32, 1000, 20.0), (200, 100, 8.0)]


@pytest.mark.parametrize("size,calls,goal", SMALL_PRODUCTS, ids=lambda v: str(v))
def test_small_products(benchmark, rounds, size, calls, goal):
    rng = np.random.default_rng(size)
    A = rng.standard_normal((size, size))
    B = rng.standard_normal((size, size))
    info = ozaki.dgemm(A, B, return_info=True)[1]

    def many(f):
        def run():
            for _ in range(calls):
                f()
        return run

    te, tn = rotate([many(lambda: ozaki.dgemm(A, B)), many(lambda: A @ B)], max(rounds, 5))
    te, tn = te / calls, tn / calls
    if goal is None:  # the goal is the call's own time: 20 us
        _record(benchmark, f"{size}x{size}x{size} per call", te, 20e-6, 1.0, info)
        benchmark.extra_info.update(numpy_s=tn, numpy_ratio=te / tn)
    else:
        _record(benchmark, f"{size}x{size}x{size}", te, tn, goal, info)

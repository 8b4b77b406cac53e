"""pytest-benchmark suite: ``ozaki.dgemm`` against numpy's DGEMM in the same run.

Run with ``make bench`` (``pytest benchmarks --benchmark-enable
--benchmark-min-rounds=3``); pick sizes with ``OZAKI_BENCH_SIZES=1024,2048``.
Each emulated benchmark's ``extra_info`` holds its ratio to numpy (median over
median, numpy measured in the same session and interleaved), the number of
low-precision GEMMs, the median seconds per phase, the shares of the wall time
spent in the modular GEMMs (``share_products``), in the scaling phase
(``share_scaling``, which holds the accurate-mode bound GEMM) and in all GEMMs
(``share_gemms``, the bound GEMM estimated as one numpy DGEMM of the same
shape), and the workspace size. ``--benchmark-json FILE`` saves them.
"""

from __future__ import annotations

import statistics

import pytest

import bench_common


def test_numpy(benchmark, n, inputs, rounds, numpy_baseline):
    """The baseline: numpy ``A @ B`` (its BLAS's DGEMM) on the same inputs."""
    A, B = inputs
    walls = []

    def target():
        w = bench_common.time_numpy(A, B)
        walls.append(w)

    benchmark.group = f"dgemm n={n}"
    benchmark.pedantic(target, rounds=rounds, warmup_rounds=1, iterations=1)
    walls = walls[1:] if len(walls) > 1 else walls  # drop the warm-up round
    numpy_baseline.add(n, walls)
    benchmark.extra_info.update(n=n, scheme="numpy", median_s=statistics.median(walls),
                                blas=bench_common.blas_info())


def test_ozaki(benchmark, n, cfg, inputs, rounds, numpy_baseline):
    """``ozaki.dgemm`` with one (scheme, num_moduli, mode, engine); ratio to numpy in
    extra_info (with the engine and scheme the call ran and the instruction set)."""
    if not cfg.available():
        pytest.skip(f"engine {cfg.engine} is not available here")
    A, B = inputs
    walls, infos = [], []

    def target():
        w, info = bench_common.run_config(cfg, A, B)
        walls.append(w)
        infos.append(info)

    benchmark.group = f"dgemm n={n}"
    benchmark.pedantic(target, rounds=rounds, warmup_rounds=1, iterations=1)
    if len(walls) > 1:
        walls, infos = walls[1:], infos[1:]  # drop the warm-up round
    numpy_baseline.measure(n, A, B)
    summary = bench_common.summarize(walls, infos, numpy_baseline.median(n))
    benchmark.extra_info.update(n=n, num_moduli_arg=cfg.num_moduli, engine_arg=cfg.engine,
                                isa=bench_common.isa(), **summary,
                                workspace_n2_doubles=summary["workspace_bytes"] / (8 * n * n))
    if cfg.num_moduli != "auto":
        assert all(i.num_moduli == cfg.num_moduli for i in infos)


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_peak_memory(n, mode, numpy_baseline, benchmark):
    """Peak extra resident memory of fp64 / 6 moduli at the largest size (subprocess).

    Not a timing: records the figures in ``extra_info`` of a trivial benchmark so
    they land in the same JSON. Checks the issue's goal of at most 8 n^2 doubles.
    """
    if n != max(bench_common.sizes_from_env()):
        pytest.skip("peak memory is measured at the largest size only")
    res = bench_common.peak_memory(n, scheme="fp64", num_moduli=6, mode=mode)
    ref = bench_common.peak_memory(n, what="numpy")
    benchmark.group = f"memory n={n}"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    benchmark.extra_info.update(
        n=n, scheme="fp64", num_moduli=6, mode=mode, method=res["method"],
        peak_first_call_n2=res["first_n2"], peak_repeat_call_n2=res["second_n2"],
        retained_n2=res["retained_n2"], numpy_peak_n2=ref["first_n2"],
        peak_beyond_numpy_n2=res["first_n2"] - ref["first_n2"])
    assert res["first_n2"] <= 8.0 + 0.05, res

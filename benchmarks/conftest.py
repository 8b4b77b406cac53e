"""Fixtures of the DGEMM benchmarks (``make bench``; not part of ``make test``).

Sizes: ``OZAKI_BENCH_SIZES=1024,2048`` (default 1024,2048,4096). Rounds: the
larger of 3 and ``--benchmark-min-rounds``, after one untimed warm-up round
(the grow-only workspace is then resident, as in steady use).
"""

from __future__ import annotations

import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402


def pytest_generate_tests(metafunc):
    if "n" in metafunc.fixturenames:
        metafunc.parametrize("n", bench_common.sizes_from_env(), ids=lambda n: f"n{n}",
                             scope="session")
    if "cfg" in metafunc.fixturenames:
        metafunc.parametrize("cfg", bench_common.CONFIGS, ids=lambda c: c.label)


def pytest_report_header(config):
    blas = bench_common.blas_info()
    return [f"ozaki bench sizes: {bench_common.sizes_from_env()}",
            f"cpu: {bench_common.cpu_model()}, {os.cpu_count()} cores; blas: {blas}"]


@pytest.fixture(scope="session")
def rounds(request) -> int:
    try:
        configured = int(request.config.getoption("benchmark_min_rounds"))
    except (ValueError, TypeError):
        configured = 3
    return max(3, configured)


@pytest.fixture(scope="session")
def compiled():
    """Compile (or load from cache) every kernel once, before anything is timed."""
    bench_common.warm_up_compilation()
    return True


@pytest.fixture(scope="session")
def _inputs_cache():
    return {}


@pytest.fixture
def inputs(n, _inputs_cache, compiled):
    """Seeded ``A``, ``B`` of size n (only the current size is kept in memory)."""
    if n not in _inputs_cache:
        _inputs_cache.clear()
        _inputs_cache[n] = bench_common.make_inputs(n)
    return _inputs_cache[n]


class NumpyBaseline:
    """numpy ``A @ B`` times per size, gathered in this session.

    The numpy benchmark's rounds go in first; each emulated benchmark then adds
    numpy timings taken right after its own rounds (interleaved), so the
    ratio's denominator follows the machine's state through the session.
    """

    def __init__(self):
        self.samples: dict[int, list[float]] = {}

    def add(self, n, seconds):
        self.samples.setdefault(n, []).extend(seconds)

    def measure(self, n, A, B, times=3):
        A @ B
        self.add(n, [bench_common.time_numpy(A, B) for _ in range(times)])

    def median(self, n) -> float:
        return statistics.median(self.samples[n])


@pytest.fixture(scope="session")
def numpy_baseline():
    return NumpyBaseline()

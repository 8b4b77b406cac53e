"""The passes' threads (ozaki.backends.cpu.parallel): fork, spawn and concurrent callers give the same bits."""

from __future__ import annotations

import functools
import multiprocessing as mp
import threading

import numpy as np
import pytest
import scipy.fft

import fft
import ozaki
from ozaki.backends.cpu import parallel

#: Seconds a pool may take before the test fails (a worker that aborted leaves the
#: Pool waiting forever: the timeout turns that hang into a failure).
_TIMEOUT = 240


def _operands(seed: int = 0):
    rng = np.random.default_rng(seed)
    # 300 x 300: above the size under which the passes run on the calling thread
    A = rng.standard_normal((300, 300)) * np.exp2(rng.integers(-20, 20, (300, 1)))
    B = rng.standard_normal((300, 300))
    return A, B, rng.standard_normal((64, 1024))


_CALLS = [functools.partial(ozaki.dgemm, mode="accurate"),
          functools.partial(ozaki.dgemm, mode="fast", scheme="int8"),
          functools.partial(ozaki.zgemm, scheme="fp8")]


def _results(A, B, X):
    out = [call(A, B if i < 2 else B + 1j * A) for i, call in enumerate(_CALLS)]
    return out + [fft.fft(X), fft.rfftn(X.reshape(16, 4, 1024))]


def _pool_results(ctx, A, B, X):
    with ctx.Pool(2) as pool:
        jobs = [pool.apply_async(call, (A, B if i < 2 else B + 1j * A))
                for i, call in enumerate(_CALLS)]
        jobs += [pool.apply_async(fft.fft, (X,)),
                 pool.apply_async(fft.rfftn, (X.reshape(16, 4, 1024),))]
        return [job.get(timeout=_TIMEOUT) for job in jobs]


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


@pytest.mark.slow
@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="no fork here")
def test_forked_pool_after_use_in_the_parent_gives_the_parents_bits():
    A, B, X = _operands()
    want = _results(A, B, X)  # the parent has run every pass on its threads
    _same(_pool_results(mp.get_context("fork"), A, B, X), want)
    _same(_results(A, B, X), want)  # and the parent's pool still serves it


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="no fork here")
def test_forked_pool_through_the_scipy_backend():
    # scipy.fft's own test_multiprocess, with fft.scipy_backend in force
    X = np.random.default_rng(1).standard_normal((16, 4096))
    with scipy.fft.set_backend(fft.scipy_backend):
        want = [scipy.fft.fft(x) for x in X]
        with mp.get_context("fork").Pool(2) as pool:
            got = pool.map_async(scipy.fft.fft, X).get(timeout=_TIMEOUT)
    _same(got, want)


@pytest.mark.slow
def test_spawned_pool_gives_the_parents_bits():
    A, B, X = _operands(2)
    _same(_pool_results(mp.get_context("spawn"), A, B, X), _results(A, B, X))


@pytest.mark.slow
def test_concurrent_threads_give_each_callers_serial_bits():
    cases = [_operands(seed) for seed in range(3)]
    with parallel.limit(1):
        want = [_results(*case) for case in cases]
    got = [None] * (2 * len(cases))
    errors = []

    def work(i):
        try:
            got[i] = _results(*cases[i % len(cases)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(got))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(_TIMEOUT)
    assert not errors and not any(t.is_alive() for t in threads)
    for i, g in enumerate(got):
        _same(g, want[i % len(cases)])


# -- the runner itself ---------------------------------------------------------

def _record(t0, t1, seen, fail_at=-1):
    for t in range(t0, t1):
        if t == fail_at:
            raise RuntimeError(f"task {t}")
        seen[t] += 1


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
@pytest.mark.parametrize("tasks", [0, 1, 2, 5, 97])
def test_run_covers_every_task_once(threads, tasks):
    seen = np.zeros(tasks, np.int64)
    with parallel.limit(threads):
        parallel.run(_record, tasks, seen)
    assert (seen == 1).all()


def test_run_raises_the_first_error_after_every_range_ran():
    seen = np.zeros(40, np.int64)
    with parallel.limit(4), pytest.raises(RuntimeError, match="task 25"):
        parallel.run(_record, 40, seen, 25)
    assert (seen[:25] == 1).all() and (seen[30:] == 1).all()  # the other ranges finished


def test_limit_is_local_to_the_calling_thread_and_restored():
    default = parallel.threads()
    assert default == parallel.default_threads() >= 1
    seen = []
    with parallel.limit(1):
        assert parallel.threads() == 1
        with parallel.limit(5):
            assert parallel.threads() == 5
        assert parallel.threads() == 1
        t = threading.Thread(target=lambda: seen.append(parallel.threads()))
        t.start()
        t.join()
    assert seen == [default] and parallel.threads() == default
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        with parallel.limit(0):
            pass  # pragma: no cover


def test_the_pool_grows_under_concurrent_callers_without_losing_a_range():
    # callers with different limits: a larger one replaces the pool while others
    # still submit to the old one, which must keep serving them
    errors, done = [], []

    def work(threads):
        try:
            for _ in range(20):
                seen = np.zeros(50, np.int64)
                with parallel.limit(threads):
                    parallel.run(_record, 50, seen)
                assert (seen == 1).all()
            done.append(threads)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    callers = [threading.Thread(target=work, args=(t,)) for t in (2, 9, 3, 17, 5, 33)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(_TIMEOUT)
    assert not errors and sorted(done) == [2, 3, 5, 9, 17, 33]

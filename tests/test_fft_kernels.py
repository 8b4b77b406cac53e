"""The stage passes of :mod:`fft.kernels` in row ranges on several threads
(:func:`fft.kernels.split_run`): every value written once, the bits of one range."""

from __future__ import annotations

import numpy as np
import pytest

from fft import kernels


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 31, 5), (2, 33, 70), (3, 100, 64)])
@pytest.mark.parametrize("threads", [2, 3, 7])
def test_transpose_in_ranges_is_the_transpose(shape, threads, monkeypatch):
    X = np.random.default_rng(sum(shape)).standard_normal(shape)
    monkeypatch.setattr(kernels, "SPLIT_BELOW", 0)
    monkeypatch.setattr(kernels.ozaki, "get_workers", lambda: threads)
    Y = kernels.transpose(X)
    assert Y.flags.c_contiguous and np.array_equal(Y, X.transpose(0, 2, 1))


@pytest.mark.parametrize("r,M,c", [(2, 1, 1), (4, 7, 3), (8, 37, 16), (16, 300, 1)])
@pytest.mark.parametrize("threads", [2, 3, 7])
def test_twiddle_transpose_in_ranges_keeps_the_bits(r, M, c, threads, monkeypatch):
    rng = np.random.default_rng(r * M * c)
    Y = rng.standard_normal((2, r, M, c))
    Tr, Ti = rng.standard_normal((2, r, M))
    want = kernels.twiddle_transpose(Y, Tr, Ti)  # small: one range
    tr, ti = Tr[:, :, None], Ti[:, :, None]  # each part: two products, one difference/sum
    assert np.array_equal(want[0], (Y[0] * tr - Y[1] * ti).transpose(1, 0, 2))
    assert np.array_equal(want[1], (Y[0] * ti + Y[1] * tr).transpose(1, 0, 2))
    monkeypatch.setattr(kernels, "SPLIT_BELOW", 0)
    monkeypatch.setattr(kernels.ozaki, "get_workers", lambda: threads)
    got = kernels.twiddle_transpose(Y, Tr, Ti)
    assert got.tobytes() == want.tobytes()


def test_split_run_finishes_every_range_before_raising():
    done = []

    def kernel(lo, hi, out):
        done.append((lo, hi))
        if lo == 0:
            raise RuntimeError("first range")

    with pytest.raises(RuntimeError, match="first range"):
        kernels.split_run(kernel, 9, 1 << 30, None, threads=3)
    assert sorted(done) == [(0, 3), (3, 6), (6, 9)]

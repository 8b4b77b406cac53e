"""The CRT's scaling by ``2**-(s_i + t_j)`` (:func:`ozaki.backends.cpu.reconstruct.ldexp`):
rows whose exponents are all normal multiply by the power of two built from its bits,
the others call ``ldexp``; either way each entry is the unscaled value times ``2**e``
rounded once, ``numpy.ldexp``'s bits, in the parallel pass and in the serial kernels."""

from __future__ import annotations

import numpy as np
import pytest

from ozaki.backends import get_backend
from ozaki.backends.cpu import reconstruct
from ozaki.core.moduli import crt_plan


@pytest.mark.parametrize("num_moduli", [2, 6, 9])
def test_scaling_at_the_edges_of_the_normal_exponents(num_moduli):
    rng = np.random.default_rng(num_moduli)
    plan = crt_plan("fp64", num_moduli)
    b, m, n = 1, 8, 37
    R = np.array([rng.integers(-(p // 2), (p - 1) // 2, (b, m, n), endpoint=True)
                  for p in plan.moduli], np.float64)
    R[:, 0, 0, :3] = 0  # zeros stay +0.0
    backend = get_backend()
    zero_s, zero_t = np.zeros((b, m), np.int64), np.zeros((b, n), np.int64)
    value = np.empty((b, m, n))
    backend.reconstruct(R, plan, zero_s, zero_t, value)  # the unscaled values, exactly
    assert (value == np.round(value)).all()
    # rows: every e inside [-1022, 1023] (ends included), one e just outside each end,
    # and rows far outside (zero, subnormal, infinite results)
    top = int(np.abs(value).max()).bit_length()  # values below 2**top
    s = np.array([[0, 1022, -1023, 1021, -1024, top + 1040, -1100, 2000 + top]])
    t = rng.integers(-1, 2, (b, n))
    t[0, :2] = (0, 1)
    for got_kind in ("parallel", "serial", "fused"):
        got = np.full((b, m, n), np.nan)
        if got_kind == "parallel":
            backend.reconstruct(R, plan, s, t, got)
        elif got_kind == "serial":
            reconstruct.reconstruct_serial(R, plan.weights, plan.p_levels, plan.p_inv, s, t,
                                           got, 0, np.empty((0, 3)), True)
        else:
            with backend.serial_passes():  # short exact products: the fused kernel
                backend.reconstruct(R, plan, s, t, got, products=True, bound=2 ** 52)
        with np.errstate(over="ignore", under="ignore"):
            want = np.ldexp(value, -(s[:, :, None] + t[:, None, :]))
        assert got.tobytes() == want.tobytes(), got_kind
    assert np.isinf(want).any() and ((want != 0) & (np.abs(want) < 2.0 ** -1022)).any()
    assert not np.signbit(want[0, 0, :3]).any()

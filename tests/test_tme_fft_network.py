"""tme_model.fft_network: the distributed 3-D FFT's schedule, exact traffic and time.

The schedule is checked against fft.distributed's own layout arithmetic (a separate
implementation), the time against the serial FFT model it must reduce to on one rank.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import fft
from fft.distributed.layout import block
from tme_model import fft_network as N
from tme_model import fft_workload as F
from tme_model.network import Network, RankRates
from tme_model.profile import PhaseCosts, Profile

PROFILE = Profile("local", 0.05, 0.01, 0.012, {"fp64": {"cpu-blas": 0.04}},
                  phases={"fp64": PhaseCosts(2e-9, 4e-9, 1.5e-9, 3e-9, 1e-3)}, fp64_n0=300.0,
                  lowp_n0={"fp64": {"cpu-blas": 80.0}})
NET = Network("test", "test", 2e-6, 5e9)


def _points(index) -> int:
    return math.prod(s.stop - s.start for s in index)


def _overlap(a, b) -> int:
    return math.prod(max(0, min(x.stop, y.stop) - max(x.start, y.start)) for x, y in zip(a, b))


@pytest.mark.parametrize("shape,P,Q,transform,axes", [
    ((6, 5, 7), 2, 2, "c2c", (0, 1, 2)), ((3, 9, 10), 4, 1, "c2c", (0, 1, 2)),
    ((8, 3, 5), 1, 3, "r2c", (0, 1, 2)), ((7, 6, 9), 3, 2, "r2c", (0, 1, 2)),
    ((7, 6, 9), 3, 2, "r2c", (0, 2, 1)), ((5, 8, 6), 2, 2, "c2c", (1, 2, 0))])
def test_schedule_and_bytes_follow_the_layout(shape, P, Q, transform, axes):
    steps = N.fft3d_steps(shape, P, Q, transform, axes)
    sh, real = list(shape), transform == "r2c"
    transforms = [s for s in steps if isinstance(s, N.LocalTransform)]
    assert [t.axis for t in transforms] == list(reversed(axes))  # last to first, as fft.fftn
    for st in steps:
        if isinstance(st, N.LocalTransform):
            # every point of the array is in exactly one rank's columns
            assert sum(st.widths) * st.length == math.prod(sh)
            assert st.real_in == real
            if st.real_in:
                sh[st.axis] = sh[st.axis] // 2 + 1
            real = False
            continue
        (a, b), new = st.before, st.after
        assert new == ((3 - a - b, b) if st.axis == a else (a, 3 - a - b))
        assert st.size == (P if st.axis == a else Q) > 1
        item = 8 if real else 16  # real data moves before the real axis is transformed
        assert st.itemsize == item
        for r in range(P * Q):  # all the rank holds but what it keeps
            old_i, new_i = block(sh, P, Q, st.before, r), block(sh, P, Q, new, r)
            assert st.points[r] == _points(old_i) and st.received[r] == _points(new_i)
            assert st.bytes[r] == (_points(old_i) - _overlap(old_i, new_i)) * item
    if axes == (0, 1, 2):
        exchanges = [s for s in steps if isinstance(s, N.Exchange)]
        assert len(exchanges) == (P > 1) + (Q > 1)  # a slab's trivial cut costs nothing


def test_one_rank_is_the_serial_model():
    shape = (12, 10, 16)
    got = N.fft3d_time(shape, 1, 1, PROFILE, NET)
    serial = F.predict_fft(F.fft_workload(shape), PROFILE)
    assert got["network_s"] == 0.0
    # the stage products and twiddles are the serial model's; its layout passes too
    assert got["transforms_s"] == pytest.approx(sum(serial.gemm_s) + serial.twiddle_s)
    assert got["passes_s"] == pytest.approx(serial.layout_s)


def test_rates_divide_their_terms_and_the_network_adds_alpha_beta():
    shape, P = (16, 12, 10), 4
    base = N.fft3d_time(shape, P, 1, PROFILE, NET)
    fast = N.fft3d_time(shape, P, 1, PROFILE, NET, rates=2.0)
    assert fast["transforms_s"] == pytest.approx(base["transforms_s"] / 2)
    assert fast["passes_s"] == pytest.approx(base["passes_s"] / 2)
    assert fast["network_s"] == base["network_s"]
    (ex,) = [s for s in N.fft3d_steps(shape, P, 1) if isinstance(s, N.Exchange)]
    assert base["network_s"] == pytest.approx((P - 1) * NET.alpha_s + max(ex.bytes) / NET.beta_bps)
    # only the products' rate moves the products
    slow = N.fft3d_time(shape, P, 1, PROFILE, NET, rates=RankRates(products=0.5))
    assert slow["transforms_s"] > base["transforms_s"] and slow["passes_s"] == base["passes_s"]


def test_more_ranks_less_compute_and_flops_convention():
    shape = (32, 32, 32)
    t = [N.fft3d_time(shape, P, Q, PROFILE, NET)["transforms_s"] for P, Q in ((1, 1), (2, 1),
                                                                               (4, 1))]
    assert t[0] > t[1] > t[2]
    assert N.fft3d_flops(shape) == 5 * 32 ** 3 * 15 == 2 * N.fft3d_flops(shape, "r2c")


@pytest.mark.parametrize("bad", [dict(transform="c2r"), dict(shape=(4, 4)), dict(P=0)])
def test_bad_arguments(bad):
    kw = dict(shape=(4, 4, 4), P=2, Q=1, transform="c2c") | bad
    with pytest.raises(ValueError):
        N.fft3d_steps(kw.pop("shape"), kw.pop("P"), kw.pop("Q"), **kw)


def test_cluster_rows_one_gpu_is_the_device_projection_and_the_network_adds():
    from tme_model.fft_projection import project_fft
    from tme_model.network import load_network
    from tme_model.scenario import Scenario
    from tme_model.specs import get_device, load_devices

    n = 64
    (one,) = N.fft3d_cluster_rows("b300", "ndr", gpus=(1,), sizes=(n,))
    whole = project_fft(F.fft_workload((n, n, n), counts=False),
                        get_device("b300", load_devices()), Scenario(mode="fast", gamma=0.0))
    assert one["exchange_s"] == 0.0 and one["grid"] == "1x1"
    assert one["native_compute_s"] == pytest.approx(whole.native_s)
    assert one["emulated_compute_s"] == pytest.approx(whole.emulated_s)
    rows = N.fft3d_cluster_rows("b300", "ndr", gpus=(4, 16), sizes=(n,))
    net = load_network("ndr")
    for r in rows:
        P, Q = map(int, r["grid"].split("x"))
        ex = [s for s in N.fft3d_steps((n, n, n), P, Q) if isinstance(s, N.Exchange)]
        assert r["exchange_s"] == pytest.approx(sum(max(net.message_s(b, s.size - 1)
                                                        for b in s.bytes) for s in ex))
        assert r["emulated_s"] == pytest.approx(r["emulated_compute_s"] + r["exchange_s"])
        # the network dilutes the local advantage, never reverses it
        assert min(1.0, r["speedup_without_network"]) <= r["speedup"] <= max(
            1.0, r["speedup_without_network"])
    assert rows[1]["native_compute_s"] == pytest.approx(rows[0]["native_compute_s"] / 4)
    assert "MODELLED" not in N.markdown(rows) and N.markdown(rows).count("\n") == 3


def test_cluster_cli(capsys):
    assert N.main(["--gpus", "4", "--n", "64"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("MODELLED") and "| 4 | 2x2 | 64 |" in out
    with pytest.raises(SystemExit):
        N.main(["--gpu", "no-such-gpu", "--gpus", "4", "--n", "64"])

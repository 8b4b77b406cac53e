"""Tests of the network term of the TME model (tme_model.network, tme_model.cluster)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tme_model import cluster
from tme_model.network import (Network, bcast_s, fit_alpha_beta, load_network, load_networks,
                               network_roof_tflops, panel_widths, summa_comm_s, summa_traffic)
from tme_model.specs import TMEError


def test_fit_recovers_alpha_and_beta():
    b = np.array([8, 512, 32768, 1 << 20, 1 << 23], float)
    t = 3e-6 + b / 2e9
    alpha, beta = fit_alpha_beta(b, t)
    assert alpha == pytest.approx(3e-6, rel=1e-9) and beta == pytest.approx(2e9, rel=1e-9)
    with pytest.raises(ValueError, match="distinct sizes"):
        fit_alpha_beta([8, 8], [1e-6, 1e-6])
    with pytest.raises(ValueError, match="no bandwidth"):
        fit_alpha_beta([8, 1 << 20], [1e-3, 1e-6])


@pytest.mark.parametrize("K,P,Q,w", [(53, 2, 2, 5), (512, 1, 4, 512), (1000, 4, 1, 64),
                                     (7, 4, 4, 3)])
def test_panels_are_those_of_ozaki_distributed(K, P, Q, w):
    from ozaki.distributed import bounds, panels
    got = panel_widths(K, P, Q, w)
    want = panels(K, P, Q, w)
    assert [g[0] for g in got] == [k1 - k0 for k0, k1 in want]
    for (_, qa, pb), (k0, k1) in zip(got, want):
        assert bounds(K, Q)[qa] <= k0 < k1 <= bounds(K, Q)[qa + 1]
        assert bounds(K, P)[pb] <= k0 < k1 <= bounds(K, P)[pb + 1]


def test_traffic_totals_and_messages():
    M, N, K, P, Q = 37, 29, 53, 2, 3
    nbytes, msgs = summa_traffic(M, N, K, P, Q, 5)
    assert nbytes.shape == (P, Q)
    assert nbytes.sum() == 8 * K * ((Q - 1) * M + (P - 1) * N)  # every entry sent once per copy
    npan = len(panel_widths(K, P, Q, 5))
    assert msgs.sum() == npan * (P * (Q - 1) + Q * (P - 1))
    assert summa_traffic(M, N, K, 1, 1, 5)[0].sum() == 0


def test_bcast_and_comm_times():
    net = Network("x", "x", 1e-6, 1e9)
    assert bcast_s(net, 1e6, 1) == 0.0
    assert bcast_s(net, 1e6, 2) == pytest.approx(1e-6 + 1e-3)
    assert bcast_s(net, 1e8, 8, "scatter-allgather") < bcast_s(net, 1e8, 8, "flat")
    with pytest.raises(ValueError, match="algorithm"):
        bcast_s(net, 1, 2, "ring")
    free = Network("y", "y", 0.0, 1e9)
    # 1 x 2 grid, K = 1024, panel 512: two panels of A (512 rows) along the row, no B traffic
    assert summa_comm_s(free, 512, 512, 1024, 1, 2, 512) == pytest.approx(2 * 8 * 512 * 512 / 1e9)
    assert math.isinf(network_roof_tflops(net, 64, 64, 64, 1, 1, 512))
    with pytest.raises(TMEError, match="beta"):
        Network("z", "z", 1e-6, 0.0)


def test_networks_are_sourced(tmp_path):
    ndr = load_networks()["ndr"]
    assert ndr.beta_bps == 50e9 and 0 < ndr.alpha_s < 1e-5
    assert "https://docs.nvidia.com" in ndr.source
    f = tmp_path / "net.json"
    f.write_text(json.dumps({"alpha_s": 2e-5, "beta_bps": 1.5e9}))
    assert load_network(str(f)).alpha_s == 2e-5
    with pytest.raises(TMEError, match="unknown network"):
        load_network("token-ring")


def test_cluster_projection(capsys):
    rows = cluster.cluster_rows("h100", "ndr", (4, 64), (16384, 65536))
    assert len(rows) == 4
    for r in rows:
        # the network adds the same time to both: it can only shrink the speedup
        assert r["speedup"] <= r["speedup_without_network"] + 1e-12
        assert r["emulated_tflops_per_gpu"] < r["network_roof_tflops_per_gpu"]
    by = {(r["gpus"], r["n"]): r for r in rows}
    assert by[(64, 65536)]["network_roof_tflops_per_gpu"] > by[(64, 16384)][
        "network_roof_tflops_per_gpu"]  # bigger blocks: more flops per byte
    assert cluster.main(["--gpus", "4", "--n", "8192", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["grid"] == "2x2"
    assert cluster.main(["--gpus", "4", "--n", "8192"]) == 0
    assert "MODELLED" in capsys.readouterr().out

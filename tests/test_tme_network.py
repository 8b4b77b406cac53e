"""Tests of the network term of the TME model (tme_model.network, tme_model.cluster)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tme_model import cluster
from tme_model.network import (Network, RankRates, bcast_s, fit_alpha_beta, load_network,
                               load_networks, network_roof_tflops, panel_widths, summa_comm_s,
                               summa_compute_parts, summa_compute_s, summa_traffic)
from tme_model.profile import PhaseCosts, Profile
from tme_model.specs import TMEError

PROFILE = Profile("local", 0.05, 0.01, 0.012, {"fp64": {"cpu-blas": 0.04}},
                  phases={"fp64": PhaseCosts(2e-9, 4e-9, 1.5e-9, 3e-9, 1e-3)}, fp64_n0=300.0,
                  lowp_n0={"fp64": {"cpu-blas": 80.0}})
EMU = dict(scheme="fp64", moduli=6, engine="cpu-blas")


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


def test_uniform_rates_recover_the_single_speed_model():
    m, n, K, widths = 300, 200, 700, [256, 256, 188]
    for speed in (1.0, 0.4):
        native = summa_compute_parts(PROFILE, m, n, K, widths, False, rates=speed)
        assert native["gemms"] == pytest.approx(
            sum(PROFILE.native_gemm_s(m, n, w) for w in widths) / speed, rel=1e-12)
        emu = summa_compute_parts(PROFILE, m, n, K, widths, True, rates=RankRates.uniform(speed),
                                  **EMU)
        t = PROFILE.predict_gemm("fp64", 6, "fast", m, n, K, engine="cpu-blas")
        gemm = sum(PROFILE.predict_gemm("fp64", 6, "fast", m, n, w, engine="cpu-blas").gemm_s
                   for w in widths)
        old = (t.total_s - t.gemm_s + gemm) / speed  # the model before the accumulation term
        assert sum(emu.values()) - emu["accumulation"] == pytest.approx(old, rel=1e-12)
        assert summa_compute_s(PROFILE, m, n, K, widths, True, rates=speed, **EMU) == \
            pytest.approx(sum(emu.values()), rel=1e-12)


@pytest.mark.parametrize("field,native_term,emulated_term", [
    ("gemm", "gemms", None), ("products", None, "products"), ("scaling", None, "scaling"),
    ("residues", None, "residues"), ("reconstruction", None, "reconstruction"),
    ("passes", None, "fixed"), ("stream", "accumulation", "accumulation")])
def test_each_term_scales_with_its_own_rate_only(field, native_term, emulated_term):
    m, n, K, widths = 256, 384, 512, [200, 200, 112]
    base = RankRates(1.3, 0.7, 0.9, 0.5, 1.1, 0.8, 0.6)
    faster = RankRates(**{**base.__dict__, field: 2 * getattr(base, field)})
    for emulated, term in ((False, native_term), (True, emulated_term)):
        kw = EMU if emulated else {}
        a = summa_compute_parts(PROFILE, m, n, K, widths, emulated, rates=base, **kw)
        b = summa_compute_parts(PROFILE, m, n, K, widths, emulated, rates=faster, **kw)
        assert a.keys() == b.keys() and all(v > 0 for v in a.values())
        for k in a:
            assert b[k] == pytest.approx(a[k] / 2 if k == term else a[k], rel=1e-12), k


def test_accumulation_is_bytes_over_streaming_bandwidth():
    m, n, K = 100, 60, 90
    bw = PROFILE.mem_tbps * 1e12 * 0.5
    rates = RankRates(stream=0.5)
    native = summa_compute_parts(PROFILE, m, n, K, [30, 30, 30], False, rates=rates)
    assert native["accumulation"] == pytest.approx(24 * m * n * 3 / bw)  # C += P, per panel
    emu = summa_compute_parts(PROFILE, m, n, K, [30, 30, 30], True, rates=rates, **EMU)
    # per modulus: acc = smod(P) (16 B per entry), then twice acc += smod(P) (24 B)
    assert emu["accumulation"] == pytest.approx(6 * m * n * (16 + 2 * 24) / bw)
    one = summa_compute_parts(PROFILE, m, n, K, [90], True, rates=rates, **EMU)
    assert one["accumulation"] == pytest.approx(6 * m * n * 16 / bw)


def test_scaling_reads_the_local_blocks_residues_every_panel():
    m, n, K = 128, 64, 512  # a 2 x 4 grid's block: A is m x K/4, B is K/2 x n
    whole = summa_compute_parts(PROFILE, m, n, K, [128] * 4, True, **EMU)
    local = summa_compute_parts(PROFILE, m, n, K, [128] * 4, True, local_k=(128, 256), **EMU)
    assert whole["scaling"] == pytest.approx(2e-9 * (m * K + K * n))
    assert local["scaling"] == pytest.approx(2e-9 * (m * 128 + 256 * n))
    # the residues of every received panel: all of A's rows and B's columns of the block
    assert local["residues"] == pytest.approx(1.5e-9 * 6 * (m * K + K * n))
    assert local["reconstruction"] == pytest.approx(3e-9 * 6 * m * n)
    assert summa_compute_parts(PROFILE, 0, n, K, [K], True, **EMU)["products"] == 0.0


def test_rank_rates_validate():
    assert RankRates.uniform(0.5) == RankRates(*[0.5] * 7)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(TMEError, match="positive finite"):
            RankRates(residues=bad)


class _OneRank:
    """The two calls :func:`benchmarks.mpi.probe.rank_rates` makes of a communicator."""

    def Barrier(self):
        pass

    def Get_rank(self):
        return 0


def test_probe_rates_are_profile_time_over_measured_time():
    from benchmarks.mpi.probe import rank_rates

    m, k, n = 48, 40, 24
    got = rank_rates(_OneRank(), PROFILE, (m, k, n), scheme="fp64", num_moduli=6,
                     engine="cpu-blas", repeats=1, stream_elements=1 << 12)
    r, s = got["rates"], got["seconds"]
    RankRates(**r)  # every factor the model takes, positive and finite
    assert r["residues"] * s["residues"] == pytest.approx(1.5e-9 * 6 * (m * k + k * n))
    assert r["scaling"] * s["scaling"] == pytest.approx(2e-9 * (m * k + k * n))
    gemm = PROFILE.predict_gemm("fp64", 6, "fast", m, n, k, engine="cpu-blas").gemm_s
    assert r["products"] * s["products"] == pytest.approx(gemm)
    assert r["gemm"] * s["gemm"] == pytest.approx(PROFILE.native_gemm_s(m, n, k))
    assert r["reconstruction"] * s["reconstruction"] == pytest.approx(3e-9 * 6 * m * n)
    assert got["stream_bps"] == pytest.approx(24 * (1 << 12) / s["stream"])
    assert r["stream"] == pytest.approx(got["stream_bps"] / 0.012e12)
    with pytest.raises(ValueError, match="positive shape"):
        rank_rates(_OneRank(), PROFILE, (0, 4, 4))


def test_probe_serial_products_come_from_the_serial_call(monkeypatch):
    """``products="serial"``: the products rate from ``ozaki.dgemm``'s own phase (the
    stage products of an FFT), not from bare modular products."""
    import ozaki
    from benchmarks.mpi import probe

    calls = []
    real = ozaki.dgemm

    def spy(*a, **kw):
        C, info = real(*a, **kw)
        calls.append(info.seconds["products"])
        return C, info

    monkeypatch.setattr(ozaki, "dgemm", spy)
    got = probe.rank_rates(_OneRank(), PROFILE, (16, 12, 20), scheme="fp64", num_moduli=4,
                           engine="cpu-blas", repeats=2, stream_elements=1 << 10,
                           products="serial")
    assert got["seconds"]["products"] == min(calls[1:])  # the timed calls, not the warm-up
    with pytest.raises(ValueError, match="serial"):
        probe.rank_rates(_OneRank(), PROFILE, (4, 4, 4), scheme="fp64", num_moduli=4,
                         products="bare")

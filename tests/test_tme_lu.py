"""Tests of tme_model.lu_projection: the panel's closed forms against their sums, the
updates against the TME model's own GEMM times, the invariants of the projection (GEMM
share growing with n, time at least the GEMM time, n^3 scaling, B300 gaining more than
H100), the HPL order, bad arguments and the command line."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tme_model import lu_projection as L
from tme_model.scenario import Scenario
from tme_model.specs import Device, Figure, MissingFigureError, load_devices

DEVICES = load_devices()
B300, H100 = DEVICES["b300"], DEVICES["h100"]
GAMMAS = (0.0, None)


def synthetic(p64: float = 10.0, plow: float = 1000.0, bw: float = 1e6, vec: float = 5.0,
              mem: float | None = None) -> Device:
    """FP64 matrix ``p64``, vector ``vec``, FP8 ``plow`` (TFLOP/s), bandwidth ``bw`` (TB/s)."""
    figs = {"fp64_matrix": Figure(p64), "fp64_vector": Figure(vec), "fp8": Figure(plow),
            "mem_bw": Figure(bw)}
    if mem is not None:
        figs["mem_size"] = Figure(mem)
    return Device("synthetic", "synthetic", figures=figs)


@given(st.integers(1, 3000), st.integers(1, 300))
def test_panel_closed_forms_equal_the_sums(m, w):
    w = min(w, m)
    flops, streamed, cached = L._panel_work(m, w)
    assert flops == sum((m - 1 - j) * (2 * (w - 1 - j) + 1) for j in range(w))
    assert streamed == 16 * sum((m - j) * (w - j) for j in range(w))
    assert cached == 16 * m * w


def test_hpl_flops_is_hpls_count():
    assert L.hpl_flops(3) == 2 * 27 / 3 + 1.5 * 9
    assert L.hpl_flops(4096) == pytest.approx(2 / 3 * 4096 ** 3 + 1.5 * 4096 ** 2, rel=1e-15)


@pytest.mark.parametrize("n,nb", [(1000, 128), (1024, 256), (777, 100)])
def test_updates_are_the_model_gemms_summed(n, nb):
    """On a device with (nearly) unlimited bandwidth and gamma = 0, every update is
    compute-bound: native ``sum 2 r^2 w / P64`` and emulated ``alpha`` times that
    over ``Plow``; the panels run at the vector rate and the trsm at the matrix rate."""
    dev = synthetic(bw=1e9)
    p = L.project_lu(n, dev, nb, Scenario(scheme="fp8", gamma=0.0))
    steps = [(min(nb, n - k), n - k) for k in range(0, n, nb)]
    gemm = sum(2.0 * (m - w) ** 2 * w for w, m in steps)
    assert p.gemm_native_s == pytest.approx(gemm / 10e12, rel=1e-12)
    assert p.gemm_emulated_s == pytest.approx(p.alpha * gemm / 1000e12, rel=1e-12)
    panel = sum(L._panel_work(m, w)[0] for w, m in steps)
    assert p.panel_s == pytest.approx(panel / 5e12, rel=1e-12)
    assert p.triangular_s == pytest.approx(sum((m - w) * w * (w - 1) for w, m in steps) / 10e12,
                                           rel=1e-12)
    assert p.solve_s == pytest.approx(2.0 * n * n / 5e12, rel=1e-12)
    assert p.panel_bound == "compute"


@pytest.mark.parametrize("dev", [B300, H100], ids=["b300", "h100"])
@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("panel", L.PANEL_MODELS)
def test_gemm_share_grows_with_n_and_time_covers_the_gemms(dev, gamma, panel):
    sizes = [512 * 2 ** i for i in range(9)]  # 512 .. 131072
    ps = [L.project_lu(n, dev, 256, Scenario(gamma=gamma), panel) for n in sizes]
    for a, b in zip(ps, ps[1:]):
        assert b.gemm_share > a.gemm_share
        assert b.native_gemm_share > a.native_gemm_share
    for p in ps:
        assert p.emulated_s >= p.gemm_emulated_s > 0 and p.native_s >= p.gemm_native_s > 0
        assert p.emulated_s == pytest.approx(p.shared_s + p.gemm_emulated_s, rel=1e-15)
        assert 0 < p.gemm_share < 1 and p.shared_s > 0
        assert p.native_tflops == pytest.approx(L.hpl_flops(p.n) / p.native_s / 1e12)


@pytest.mark.parametrize("dev", [B300, H100], ids=["b300", "h100"])
@pytest.mark.parametrize("gamma", GAMMAS)
def test_time_scales_like_n_cubed_at_large_n(dev, gamma):
    sizes = [2 ** e for e in range(12, 21)]
    ps = [L.project_lu(n, dev, 256, Scenario(gamma=gamma)) for n in sizes]
    for attr in ("native_s", "emulated_s"):
        ratios = [getattr(b, attr) / getattr(a, attr) for a, b in zip(ps, ps[1:])]
        gaps = [abs(r - 8.0) for r in ratios]
        assert all(r <= 8.0 + 1e-9 for r in ratios)  # the n^2 nb parts only slow the growth
        assert gaps == sorted(gaps, reverse=True)
        assert gaps[-1] < 0.05 * 8


@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("n", [8192, 32768, 65536])
def test_b300_gains_more_than_h100_over_native_fp64(gamma, n):
    b300, h100 = (L.project_lu(n, d, 256, Scenario(gamma=gamma)) for d in (B300, H100))
    assert b300.speedup > h100.speedup
    assert b300.speedup > 1.0
    assert b300.native_tflops < b300.emulated_tflops


def test_one_panel_has_no_update():
    p = L.project_lu(100, B300, 256)
    assert p.gemm_native_s == p.gemm_emulated_s == p.triangular_s == 0.0
    assert p.gemm_share == 0.0 and p.speedup == 1.0 and p.scheme == "fp8"


def test_hpl_size_fills_the_memory_in_multiples_of_nb():
    for dev in (B300, H100):
        n = L.hpl_size(dev, 256)
        mem = dev.get("mem_size") * 1e9
        assert n % 256 == 0 and 8 * n * n <= L.HPL_MEMORY_FILL * mem < 8 * (n + 256) ** 2
        assert L.project_lu(n, dev).fits_memory
    assert L.project_lu(10 ** 6, B300).fits_memory is False
    assert L.project_lu(1024, synthetic()).fits_memory is None


@pytest.mark.parametrize("call,err", [
    (lambda: L.project_lu(0, B300), ValueError),
    (lambda: L.project_lu(-5, B300), ValueError),
    (lambda: L.project_lu(2.5, B300), TypeError),
    (lambda: L.project_lu(True, B300), TypeError),
    (lambda: L.project_lu(1024, B300, nb=0), ValueError),
    (lambda: L.project_lu(1024, B300, nb="64"), TypeError),
    (lambda: L.project_lu(1024, "b300"), TypeError),
    (lambda: L.project_lu(1024, B300, scenario="fast"), TypeError),
    (lambda: L.project_lu(1024, B300, panel="recursive"), ValueError),
    (lambda: L.hpl_size(B300, 256, fill=0.0), ValueError),
    (lambda: L.hpl_size(B300, 256, fill=1.5), ValueError),
    (lambda: L.hpl_size(synthetic(), 256), MissingFigureError),
])
def test_bad_arguments_raise(call, err):
    with pytest.raises(err) as exc:
        call()
    assert any(w in str(exc.value) for w in ("n must", "nb must", "device", "scenario",
                                              "panel", "fill", "mem_size"))


def test_rows_and_rst_table():
    rows = L.lu_projection_rows(("b300",), (4096,), 256)
    assert [(r["n"], r["gamma"], r["hpl"]) for r in rows] == [
        (4096, "0", False), (4096, "est.", False),
        (L.hpl_size(B300, 256), "0", True), (L.hpl_size(B300, 256), "est.", True)]
    # gamma = 0 can only be faster than the estimated reconstruction cost
    assert rows[0]["emulated_s"] < rows[1]["emulated_s"]
    assert rows[0]["native_s"] == rows[1]["native_s"]
    text = L.lu_projection_rst(rows)
    assert text.count("b300") == 4 and "(HPL)" in text and "fp8 N=13" in text


def test_command_line(capsys):
    assert L.main(["--gpu", "h100", "--n", "4096", "--no-hpl", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and {r["gpu"] for r in rows} == {"h100"}
    assert all(math.isclose(r["speedup"], r["native_s"] / r["emulated_s"]) for r in rows)
    assert L.main(["--gpu", "b300", "--n", "8192"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("MODELLED") and "(HPL)" in out
    for argv in (["--gpu", "nosuchgpu"], ["--n", "0"], ["--nb", "0"]):
        with pytest.raises(SystemExit) as exc:
            L.main(argv)
        assert exc.value.code == 2
    assert "unknown device" in capsys.readouterr().err

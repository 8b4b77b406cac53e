"""Tests of tme_model.hpl_cluster: the GPU-cluster projection's consistency (the order
fills the memory share, the runs differ in their updates alone, every rate sourced) and
its command lines (python -m tme_model.hpl_cluster, and python -m tme_model.hpl_network
with the same arguments)."""

from __future__ import annotations

import json

import pytest

from tme_model import hpl_cluster as G
from tme_model import hpl_network as H
from tme_model.lu_projection import hpl_flops
from tme_model.specs import load_devices

B300 = load_devices()["b300"]


def test_cluster_projection_is_consistent():
    proj = G.cluster_rows("b300", 64, "ndr", nb=2048)
    n, P, Q = proj["n"], 8, 8
    assert proj["grid"] == "8x8" and n % 2048 == 0
    room = 0.8 * B300.require("mem_size") * 1e9
    held = H.cyclic_count(n, 2048, P, 0) * H.cyclic_count(n, 2048, Q, 0)
    assert 8 * held <= room < 8 * H.cyclic_count(n + 2048, 2048, P, 0) ** 2
    native, fused, est = proj["rows"]
    phases = ("panel", "broadcasts", "interchanges", "triangular", "updates", "solve")
    for r in proj["rows"]:
        assert all(r[f"{k}_s"] > 0 for k in phases)
        assert r["total_s"] == pytest.approx(sum(r[f"{k}_s"] for k in phases), rel=1e-12)
        assert r["tflops"] == pytest.approx(hpl_flops(n) / r["total_s"] / 1e12, rel=1e-12)
        assert r["speedup"] == pytest.approx(native["total_s"] / r["total_s"], rel=1e-12)
        # only the updates differ between the runs (the factorisation's and the solve's)
        for k in ("panel", "broadcasts", "interchanges", "triangular"):
            assert r[f"{k}_s"] == native[f"{k}_s"]
        gain = native["updates_s"] + native["solve_s"] - r["updates_s"] - r["solve_s"]
        assert native["total_s"] - r["total_s"] == pytest.approx(gain, rel=1e-9)
    assert native["speedup"] == 1 and fused["speedup"] > est["speedup"] > 1
    assert fused["substrate"].startswith("fp8")
    assert any("fibermall" in s for s in proj["sources"])
    assert any("docs.nvidia.com" in s and "beta" in s for s in proj["sources"])
    assert any("alpha = 40" in s and "N = 13" in s for s in proj["sources"])  # 3 N + 1


def test_cluster_command_line(capsys):
    assert H.main(["--gpu", "b300", "--ranks", "4", "--nb", "4096", "--format", "json"]) == 0
    proj = json.loads(capsys.readouterr().out)
    assert proj["grid"] == "2x2" and len(proj["rows"]) == 3
    assert H.main(["--ranks", "4", "--nb", "4096", "--lookahead"]) == 0
    out = capsys.readouterr().out
    assert "MODELLED" in out and "| native FP64 |" in out and "Sources:" in out
    assert G.main(["--ranks", "4", "--nb", "4096", "--lookahead"]) == 0  # its own entry
    assert capsys.readouterr().out == out


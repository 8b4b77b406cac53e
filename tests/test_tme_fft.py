"""Tests of tme_model.fft_workload and the FFT rows of the held-out check: the stage GEMMs
and counts derived from real plans (checked against what the plans do), the passes, the
prediction adding up its stages, monotonicity, the device projection, and the FFT rows
of ``validate`` (tiny sizes, a synthetic profile)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fft
from tme_model import calibration as cal
from tme_model import fft_projection as P
from tme_model import fft_workload as F
from tme_model import tables
from tme_model.profile import PhaseCosts, Profile
from tme_model.scenario import Scenario
from tme_model.specs import load_devices
from tme_model.workloads import Kernel

DEVICES = load_devices()


@pytest.fixture(autouse=True)
def _fp64_plans():
    """The synthetic profile has fp64/cpu-blas rates: the default plans made here run that
    scheme (``ozaki.set_scheme``; "auto" would follow the machine, int8 on cpu-onednn)."""
    import ozaki
    with ozaki.set_scheme("fp64"):
        yield


PROFILE = Profile("local", 0.05, 0.01, 0.012, {"fp64": {"cpu-blas": 0.04}},
                  phases={"fp64": PhaseCosts(2e-9, 4e-9, 1.5e-9, 3e-9, 1e-3)}, fp64_n0=300.0,
                  lowp_n0={"fp64": {"cpu-blas": 80.0}})


def _executed(n: int, width: int, **kw) -> list:
    """The stage records of one execute of ``fft.get_plan(n)`` on ``width`` columns."""
    plan = fft.get_plan(n)
    rng = np.random.default_rng(n)
    Z = rng.standard_normal((n, width)) if kw.get("real_in") else rng.standard_normal((2, n, width))
    with fft.stage_records() as recs:
        plan.execute(Z, **kw)
    return recs


@pytest.mark.parametrize("n,width,kw", [(192, 3, {}), (96, 5, {"real_in": True}),
                                        (96, 2, {"real_out": True}), (4106, 1, {})])
def test_stages_match_what_the_plan_runs(n, width, kw):
    plan = fft.get_plan(n)
    stages, twiddles = F.plan_stages(plan, width, **kw)
    # the records of a real execute: every dense stage's product (a Bluestein stage's
    # own record has no product; its inner plans' stages are recorded and modelled)
    recs = [r for r in _executed(n, width, **kw) if r.radix <= fft.DENSE_LIMIT]
    assert [(s.radix, s.n, s.form, s.num_moduli) for s in stages] == [
        (r.radix, r.columns, r.form, r.num_moduli) for r in recs]
    assert sum(r.gemms for r in recs) == sum(s.num_moduli for s in stages)  # fp64, cpu-blas
    whole = F.plan_workload(plan, width, **kw)
    assert whole.stages == tuple(stages) and whole.twiddle_points == twiddles
    assert whole.layout_points == 0 and whole.lengths == (n,) and whole.batch == width
    for s in stages:
        assert (s.m, s.k) == {"complex": (2 * s.radix,) * 2, "real-in": (2 * s.radix, s.radix),
                              "real-out": (s.radix, 2 * s.radix)}[s.form]
        assert s.flops == 2.0 * s.m * s.k * s.n
    if n == 4106:  # 2 x 2053: the prime by Bluestein through L = 4116, two inner transforms
        inner = fft.get_plan(n).stages[1].sub
        assert len(stages) == 1 + 2 * len(inner.radices)
        assert stages[0].points == n * width
    else:  # each stage covers the whole batch; twiddles after all but the last
        assert all(s.points == n * width for s in stages)
        assert [s.twiddled for s in stages] == [True] * (len(stages) - 1) + [False]
        assert twiddles == n * width * (len(stages) - 1)


def test_workload_of_fft_and_fft2():
    w = F.fft_workload((16, 1024), (-1,))
    assert (w.lengths, w.batch, w.points) == ((1024,), 16, 16 * 1024)
    assert [s.radix for s in w.stages] == fft.get_plan(1024).radices == [32, 32]
    assert (w.scheme, w.engine, w.mode, w.native) == ("fp64", "cpu-blas", "fast", False)
    assert w.flops == 5.0 * 1024 * 10 * 16 and w.gemm_flops == sum(s.flops for s in w.stages)
    assert w.layout_points == 4 * w.points  # split, last axis there and back, result
    assert F.fft_workload((1024, 16), (0,)).layout_points == 2 * w.points  # axis 0: no copy
    w2 = F.fft_workload((64, 32), (-2, -1))
    assert w2.lengths == (64, 32) and w2.batch == 1
    # axis 1 runs first (width 64), then axis 0 (width 32): as fft.fft2 runs them
    assert [(s.radix, s.n) for s in w2.stages] == [(32, 64), (64, 32)]
    with fft.stage_records() as recs:
        fft.fft2(np.ones((64, 32), complex))
    assert [(r.radix, r.columns, r.num_moduli) for r in recs] == [
        (s.radix, s.n, s.num_moduli) for s in w2.stages]
    assert w2.layout_points == 4 * 64 * 32
    assert w2.gemms == sum(s.num_moduli for s in w2.stages)
    nat = F.fft_workload((16, 1024), (-1,), plans=fft.Plan(1024, native=True))
    assert nat.native and nat.gemms == 0 and nat.scheme == ""
    assert [(s.m, s.k, s.n) for s in nat.stages] == [(s.m, s.k, s.n) for s in w.stages]
    with pytest.raises(ValueError, match="plan is for length 512"):
        F.fft_workload((16, 1024), (-1,), plans=fft.get_plan(512))
    with pytest.raises(ValueError, match="mix"):
        F.fft_workload((32, 32), plans=[fft.Plan(32, native=True), fft.get_plan(32)])
    with pytest.raises(ValueError, match="unique"):
        F.fft_workload((32, 32), (0, -2))
    unread = F.fft_workload((4, 64), (-1,), counts=False)
    assert all(s.num_moduli is None for s in unread.stages)
    with pytest.raises(ValueError, match="counts=True"):
        F.predict_fft(unread, PROFILE)


def test_prediction_adds_up_its_stages():
    w = F.fft_workload((8, 4096), (-1,))
    t = F.predict_fft(w, PROFILE)
    assert len(t.gemm_s) == len(w.stages)
    for s, g in zip(w.stages, t.gemm_s):
        assert g == pytest.approx(PROFILE.predict_gemm("fp64", s.num_moduli, "fast", s.m, s.n, s.k,
                                                       engine="cpu-blas").total_s)
    bw = PROFILE.mem_tbps * 1e12
    assert t.twiddle_s == pytest.approx(F.TWIDDLE_BYTES * w.twiddle_points / bw)
    assert t.layout_s == pytest.approx(F.LAYOUT_BYTES * w.layout_points / bw)
    assert t.total_s == pytest.approx(sum(t.gemm_s) + t.twiddle_s + t.layout_s)
    assert w.bytes == pytest.approx((t.twiddle_s + t.layout_s) * bw)
    nat = F.predict_fft(F.fft_workload((8, 4096), (-1,), native=True), PROFILE)
    assert nat.gemm_s == tuple(PROFILE.native_gemm_s(s.m, s.n, s.k) for s in w.stages)
    assert nat.twiddle_s == t.twiddle_s and nat.total_s < t.total_s


def test_predictions_grow_with_size_and_batch():
    by_batch = [F.predict_fft(F.fft_workload((b, 1024), (-1,)), PROFILE).total_s for b in (1, 4, 16)]
    by_n = [F.predict_fft(F.fft_workload((4, n), (-1,)), PROFILE).total_s for n in (256, 1024, 4096)]
    assert by_batch == sorted(by_batch) and by_n == sorted(by_n)
    assert by_batch[0] < by_batch[-1] and by_n[0] < by_n[-1]
    h200 = DEVICES["h200"]
    proj = [P.project_fft(F.fft_workload((n,) * 3, counts=False), h200) for n in (32, 64, 128)]
    assert [p.native_s for p in proj] == sorted(p.native_s for p in proj)
    assert [p.emulated_s for p in proj] == sorted(p.emulated_s for p in proj)


def test_device_projection():
    w = F.fft_workload((256, 256, 256), counts=False)  # radices 16 x 16 per axis
    assert len(w.stages) == 6 and w.twiddle_points == 3 * w.points
    for key in ("b300", "h200"):
        dev = DEVICES[key]
        for gamma in (None, 0.0):
            sc = Scenario(mode="fast", gamma=gamma)
            p = P.project_fft(w, dev, sc)
            vec, bw = dev.p64(False) * 1e12, dev.bandwidth() * 1e12
            assert p.native_s == pytest.approx(max(w.flops / vec, 32.0 * 3 * w.points / bw))
            assert p.twiddle_s == pytest.approx(6.0 * w.twiddle_points / vec)
            assert p.emulated_s == pytest.approx(sum(p.stage_s) + p.twiddle_s)
            assert p.speedup == pytest.approx(p.native_s / p.emulated_s)
            assert p.winner == ("tie" if math.isclose(p.emulated_s, p.native_s) else
                                "emulated" if p.emulated_s < p.native_s else "native")
            for s, t in zip(w.stages, p.stage_s):  # each stage a GEMM kernel of the TME model
                emu = sc.emulation(dev, Kernel("s", s.flops, 8.0 * (s.k + s.m) * s.n, s.m * s.n,
                                                 s.k, matrix=True, n_in=s.k * s.n))
                compute = emu.alpha * s.flops / (dev.require(emu.scheme) * 1e12)
                memory = 8.0 * (s.k + s.m) * s.n / bw
                assert t == pytest.approx(max(compute, memory) + emu.gamma * s.m * s.n)
    # FP64-starved B300: the emulated FFT wins only with a fused (free) reconstruction;
    # H200's FP64 keeps the native FFT at its memory roof, ahead of the emulated stages
    assert P.project_fft(w, DEVICES["b300"], Scenario(mode="fast", gamma=0.0)).winner == "emulated"
    assert P.project_fft(w, DEVICES["b300"]).winner == "native"
    assert P.project_fft(w, DEVICES["h200"], Scenario(mode="fast", gamma=0.0)).winner == "native"
    # one radix-64 stage per axis, no twiddles: at the memory roof both sides move the
    # same bytes (32 per point and axis), a tie where both are memory-bound
    one = F.fft_workload((64, 64, 64), counts=False)
    assert one.twiddle_points == 0
    assert P.project_fft(one, DEVICES["h200"], Scenario(mode="fast", gamma=0.0)).winner == "tie"


def test_validate_has_fft_rows():
    cases = (((2, 64), (-1,)), ((8, 16), (-2, -1)))
    rows = cal.validate(PROFILE, (16,), repeats=1, schemes=("fp64",), modes=("fast",),
                        progress=False, fft_cases=cases)
    ffts = [r for r in rows if r.get("kind") == "fft"]
    assert [r["scheme"] for r in rows[:2]] == ["native", "fp64"]  # the GEMM rows come first
    assert sorted((r["n"], r["scheme"]) for r in ffts) == [
        ("2x64", "fft"), ("2x64", "fft native"), ("8x16", "fft"), ("8x16", "fft native")]
    for r in ffts:
        native = r["scheme"] == "fft native"
        plans = [fft.Plan(r["shape"][a], native=True) if native else fft.get_plan(r["shape"][a])
                 for a in r["axes"]]
        want = F.predict_fft(F.fft_workload(r["shape"], r["axes"], plans=plans), PROFILE)
        assert r["predicted_s"] == pytest.approx(want.total_s)
        assert r["measured_s"] > 0 and r["ratio"] == pytest.approx(r["predicted_s"] / r["measured_s"])
        assert math.fsum(r["predicted_phases"].values()) == pytest.approx(r["predicted_s"])
        assert (r["num_moduli"] is None) == native and r["gemms"] >= 1
    md = tables.validation_markdown(rows)
    assert "ozaki.dgemm: pred/meas from" in md and "FFT (predicted from the plans: 2x64 fft" in md
    again = cal.restate(rows, PROFILE, "min")
    assert [r["predicted_s"] for r in again] == pytest.approx([r["predicted_s"] for r in rows])
    assert len(tables.validation_rst(rows).splitlines()) == 3 + len(rows) + 1
    assert not [r for r in cal.validate(PROFILE, (16,), repeats=1, schemes=("fp64",), modes=("fast",),
                                        progress=False, fft_cases=()) if r.get("kind") == "fft"]


def test_calibrate_cli_fft_rows(tmp_path, capsys):
    from tme_model.cli import calibrate_main
    from tme_model.profile_file import dump_profile

    full = Profile("local", 0.05, 0.01, 0.012, {s: {"cpu-blas": 0.04} for s in ("int8", "fp8", "fp64")},
                   phases={s: PhaseCosts(2e-9, 4e-9, 1.5e-9, 3e-9, 1e-3) for s in ("int8", "fp8", "fp64")})
    dump_profile(full, tmp_path / "p.json")
    base = ["--validate", "--profile", str(tmp_path / "p.json"), "--validate-sizes", "16",
            "--repeats", "1", "--no-progress", "--json"]
    assert calibrate_main(base + [str(tmp_path / "q.json"), "--quick"]) == 0
    import json

    rows = json.loads((tmp_path / "q.json").read_text())
    # a profile without int7 (written before it existed) validates the schemes it holds
    assert {r["scheme"] for r in rows if r.get("kind") != "fft"} == {"int8", "fp8", "fp64",
                                                                    "native"}
    assert sorted((r["n"], r["scheme"]) for r in rows if r.get("kind") == "fft") == sorted(
        ("x".join(map(str, shape)), kind) for shape, _ in cal.QUICK_FFT_CASES
        for kind in ("fft", "fft native"))
    assert "FFT (predicted from the plans:" in capsys.readouterr().out
    assert calibrate_main(base + [str(tmp_path / "n.json"), "--quick", "--no-fft"]) == 0
    assert not [r for r in json.loads((tmp_path / "n.json").read_text()) if r.get("kind") == "fft"]

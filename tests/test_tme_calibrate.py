"""Tests of ``tme-calibrate`` (tme_model.calibration): the rate fit, a quick calibration at
tiny sizes (the profile loads, rates are positive, predictions have the right
structure), the validation rows, and the new profile keys.  Accuracy of the predictions
(+-25% at n = 1024..4096) is a measured figure for the docs, not asserted here."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tme_model import calibration as cal
from tme_model import tables
from tme_model.cli import calibrate_main, table_main
from tme_model.profile import Profile
from tme_model.profile_file import dump_profile, load_profile
from tme_model.specs import TMEError

from ozaki import SCHEMES as OZAKI_SCHEMES  # what a calibration measures


def test_fit_rate_recovers_the_model():
    r_inf, n0 = 2.0e-2, 300.0  # TFLOP/s, elements
    shapes = [(n, n, n) for n in (500, 1000, 2000)] + [(1000, 2000, 500)]
    secs = [2.0 * m * n * k * (1 + n0 / (m * n * k) ** (1 / 3)) / (r_inf * 1e12) for m, n, k in shapes]
    fit = cal.fit_rate(shapes, secs)
    assert fit.tflops == pytest.approx(r_inf, rel=1e-6) and fit.n0 == pytest.approx(n0, rel=1e-6)
    assert fit.rate(1000, 1000, 1000) == pytest.approx(r_inf * 1000 / 1300)
    one = cal.fit_rate([(64, 64, 64)], [2 * 64 ** 3 / 1e9])
    assert one.tflops == pytest.approx(1e-3) and one.n0 == 0
    # a rate falling with size gives n0 = 0 (no negative efficiency)
    assert cal.fit_rate([(100,) * 3, (200,) * 3], [2e6 / 1e9, 16e6 / 0.5e9]).n0 == 0


@pytest.fixture(scope="module")
def quick_profile(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "profile.json"
    code = calibrate_main(["--quick", "--sizes", "32,64", "--no-progress", "-o", str(path)])
    assert code == 0
    return path


@pytest.mark.slow
def test_quick_calibration_writes_a_loadable_profile(quick_profile):
    prof = load_profile(quick_profile)
    assert prof.name == "local" and prof.fp64_tflops > 0 and prof.mem_tbps > 0
    assert prof.fp64_vector_tflops > 0 and prof.fp64_n0 >= 0
    for scheme in OZAKI_SCHEMES:
        assert prof.lowp_tflops[scheme]["cpu-blas"] > 0
        assert prof.gemms_per(scheme, "cpu-blas") == 1
        costs = prof.phases[scheme]
        assert all(v >= 0 for v in vars(costs).values())
    # FP8 digits on the simulation engines: three GEMMs per modulus, as ozaki counts them
    assert prof.gemms_per("fp8", "cpu-fp8") == 3 and prof.gemms_per("int8", "cpu-int8") == 1
    c = prof.meta["calibration"]
    assert c["sizes"] == [32, 64] and c["statistic"] == "median"
    assert set(c["ozaki"]) == set(OZAKI_SCHEMES)
    # shown as device local by tme-table
    dev = prof.device()
    assert dev.key == "local" and dev.get("int8") > 0 and dev.get("fp8") > 0


def test_predict_gemm_structure(quick_profile):
    prof = load_profile(quick_profile)
    assert prof.fp32_tflops["cpu-blas"] > 0 and prof.fp32_n0["cpu-blas"] >= 0
    flat = dataclasses.replace(prof, fp32_tflops={}, fp32_n0={})  # one rate per engine
    n = 1000
    # at k = 1000 the int8 products (|r| <= 128, 1000 * 128**2 <= 2**24) and every
    # accurate-mode bound GEMM fit FP32 (SGEMM); fp8 and fp64 products do not
    for scheme, N, products_fp32 in (("int8", 16, True), ("fp8", 13, False), ("fp64", 6, False)):
        fast = prof.predict_gemm(scheme, N, "fast", n, n, n, engine="cpu-blas")
        acc = prof.predict_gemm(scheme, N, "accurate", n, n, n, engine="cpu-blas")
        one64, one32 = (2.0 * n ** 3 / (prof.gemm_tflops(scheme, "cpu-blas", n, n, n, fp32=f) * 1e12)
                        for f in (False, True))
        one = one32 if products_fp32 else one64
        assert fast.gemm_s == pytest.approx(N * one)  # cpu-blas: one GEMM per modulus
        assert acc.gemm_s == pytest.approx(N * one + one32)  # + the bound GEMM, in FP32
        assert flat.predict_gemm(scheme, N, "fast", n, n, n, engine="cpu-blas").gemm_s == pytest.approx(N * one64)
        assert flat.predict_gemm(scheme, N, "accurate", n, n, n, engine="cpu-blas").gemm_s == pytest.approx((N + 1) * one64)
        refined = prof.predict_gemm(scheme, N, "accurate", n, n, n, engine="cpu-blas", refined_block=(10, 20))
        # one FP64 GEMM of the block by default (lines without zeros), as many as given
        assert refined.gemm_s - acc.gemm_s == pytest.approx(prof.native_gemm_s(10, 20, n))
        three = prof.predict_gemm(scheme, N, "accurate", n, n, n, engine="cpu-blas",
                                  refined_block=(10, 20), refined_gemms=3)
        assert three.gemm_s - acc.gemm_s == pytest.approx(3 * prof.native_gemm_s(10, 20, n))
        for bad in (-1, 4, 1.5, True):
            with pytest.raises(ValueError, match="refined_gemms"):
                prof.predict_gemm(scheme, N, "accurate", n, n, n, refined_block=(10, 20),
                                  refined_gemms=bad)
        with pytest.raises(ValueError, match="refined_block"):
            prof.predict_gemm(scheme, N, "accurate", n, n, n, refined_block=(-1, 3))
        for t in (fast, acc):
            assert t.total_s == pytest.approx(t.scale_s + t.residue_s + t.gemm_s + t.recon_s + t.fixed_s)
        ph = prof.phases[scheme]
        assert acc.scale_s - fast.scale_s == pytest.approx(ph.accurate_scale_s_per_element * 2 * n * n)
        assert fast.residue_s == pytest.approx(ph.residue_s_per_element_modulus * N * 2 * n * n)
        assert fast.recon_s == pytest.approx(ph.recon_s_per_output_modulus * N * n * n)
    # FP8 digits on cpu-fp8: 3N (+1) GEMMs
    t = prof.predict_gemm("fp8", 13, "accurate", 64, 64, 64, engine="cpu-fp8")
    assert t.gemm_s == pytest.approx(40 * 2 * 64 ** 3 / (prof.gemm_tflops("fp8", "cpu-fp8", 64, 64, 64) * 1e12))


def test_gemm_paths_follow_the_fp32_bound():
    from tme_model.profile import gemm_paths

    import ozaki

    # int8 moduli have |r| <= 128: k 128**2 <= 2**24 for k <= 1024, and per modulus above
    assert gemm_paths("int8", 16, "fast", 1024, "cpu-blas") == [(1024, True)] * 16
    assert gemm_paths("int8", 16, "fast", 1040, "cpu-blas") == [
        (1040, 1040 * (p // 2) ** 2 <= 2 ** 24) for p in ozaki.moduli("int8")[:16]]
    assert gemm_paths("int8", 16, "fast", 1040, "cpu-blas")[0] == (1040, False)  # p = 256
    assert gemm_paths("int8", 16, "fast", 2048, "cpu-blas") == [(2048, False)] * 16
    # fp64 moduli past one exact block (4096 ((p-1)/2)**2 <= 2**53): k-blocks, each in FP64
    blocks = gemm_paths("fp64", 6, "accurate", 10000, "cpu-blas")
    assert blocks[0] == (10000, True)  # the bound GEMM: r = 5, 10000 * 31**2 <= 2**24
    assert sum(length for length, _ in blocks[1:]) == 6 * 10000
    assert not any(f for _, f in blocks[1:])
    with pytest.raises(TMEError, match="not an ozaki engine"):
        gemm_paths("int8", 16, "fast", 64, "gpu-tensor")


def test_profile_feeds_tme_table(quick_profile, capsys):
    assert table_main(["--profile", str(quick_profile), "--format", "json", "--kernels", "dgemm:512"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["gpu"] == "local" and row["native_tflops"] > 0


def test_validate_rows_and_table(quick_profile):
    prof = load_profile(quick_profile)
    rows = cal.validate(prof, (48,), repeats=1, schemes=("fp64",), modes=("fast", "accurate"),
                        progress=False, fft_cases=())  # FFT rows: tests/test_tme_fft.py
    assert [(r["scheme"], r["mode"]) for r in rows] == [("native", ""), ("fp64", "accurate"), ("fp64", "fast")]
    for r in rows:
        assert r["predicted_s"] > 0 and r["measured_s"] > 0
        assert r["ratio"] == pytest.approx(r["predicted_s"] / r["measured_s"])
    assert rows[1]["num_moduli"] == 6 and rows[1]["gemms"] == 7
    md = tables.validation_markdown(rows)
    assert md.startswith("| n | scheme |") and "within +-25%" in md
    plain = tables.validation_rst(rows).splitlines()
    assert len(plain) == 3 + len(rows) + 1 and plain[1].split()[-1] == "pred/meas"
    assert plain[3].split()[:2] == ["48", "native"] and plain[3].split()[-1] == f"{rows[0]['ratio']:.2f}"
    minima = cal.restate_minima(rows, prof)  # the profile keeps its runs: minima too
    both = tables.validation_rst(rows, minima).splitlines()
    assert both[1].split()[-3:] == ["min", "[s]", "pred/meas"]
    assert len(both[3].split()) == len(plain[3].split()) + 3


def test_usage_errors(capsys, tmp_path):
    for argv, word in ((["--profile", "p.json"], "--validate"), (["--repeats", "0"], "--repeats"),
                       (["--sizes", "4,x"], "sizes"),
                       (["--validate", "--profile", str(tmp_path / "nope.json")], "not found")):
        with pytest.raises(SystemExit) as exc:
            calibrate_main(argv)
        assert exc.value.code == 2 and word in capsys.readouterr().err


def test_profile_rate_model_keys_round_trip(tmp_path):
    prof = Profile("local", 1.0, 0.5, 0.02, {"fp8": {"cpu-blas": 0.04, "cpu-fp8": 0.01}},
                   fp64_n0=200.0, lowp_n0={"fp8": {"cpu-blas": 150.0}},
                   gemms_per_modulus={"fp8": {"cpu-blas": 1, "cpu-fp8": 3}})
    assert prof.gemm_tflops(None, None, 200, 200, 200) == pytest.approx(0.5)
    # cpu-blas does an FP8 modulus in one GEMM: as a device it counts 3x per digit GEMM
    assert prof.best_engine("fp8")[0] == "cpu-blas" and prof.device().get("fp8") == pytest.approx(0.12)
    dump_profile(prof, tmp_path / "p.json")
    again = load_profile(tmp_path / "p.json")
    assert (again.fp64_n0, again.lowp_n0, again.gemms_per_modulus) == (
        200.0, {"fp8": {"cpu-blas": 150.0}}, {"fp8": {"cpu-blas": 1, "cpu-fp8": 3}})
    assert (again.fp32_tflops, again.fp32_n0) == ({}, {})
    dump_profile(dataclasses.replace(prof, fp32_tflops={"cpu-blas": 0.08}, fp32_n0={"cpu-blas": 90.0}),
                 tmp_path / "p.json")
    again = load_profile(tmp_path / "p.json")
    assert (again.fp32_tflops, again.fp32_n0) == ({"cpu-blas": 0.08}, {"cpu-blas": 90.0})
    data = json.loads((tmp_path / "p.json").read_text())
    for key, bad, msg in (("fp64_n0", -1, "fp64_n0"), ("gemms_per_modulus", {"fp8": {"x": 1.5}}, "positive integer"),
                          ("lowp_n0", {"fp8": {"x": "a"}}, "lowp_n0"),
                          ("fp32_tflops", {"cpu-blas": 0}, "fp32_tflops"),
                          ("fp32_tflops", [1.0], "fp32_tflops"), ("fp32_n0", {"cpu-blas": -2}, "fp32_n0")):
        (tmp_path / "q.json").write_text(json.dumps({**data, key: bad}))
        with pytest.raises(TMEError, match=msg):
            load_profile(tmp_path / "q.json")


def test_runner_interleaves_and_summarises():
    from tme_model.calibration.probes import FIT_PHASES
    from tme_model.calibration.runner import Runner, summarise

    import ozaki

    assert set(FIT_PHASES) == set(ozaki.PHASES)  # the phases the fit reads are ozaki's
    order: list[str] = []
    run = Runner(3, False, "test", seed=4)
    for key in "abc":
        run.add(key, lambda key=key: order.append(key) or len(order))
    res = run.run()
    assert sorted(res) == ["a", "b", "c"] and all(len(v) == 3 for v in res.values())
    assert sorted(order[:3]) == sorted(order[3:6]) == ["a", "b", "c"]  # one of each per round
    assert summarise([3.0, 1.0, 2.0], "median") == 2.0 and summarise([3.0, 1.0, 2.0], "min") == 1.0
    with pytest.raises(ValueError, match="statistic"):
        summarise([1.0], "mean")


def test_refit_with_another_statistic(quick_profile):
    prof = load_profile(quick_profile)
    before = json.dumps(prof.meta, sort_keys=True)
    assert set(prof.meta["calibration"]["runs"]) >= {"stream", "fma", "native:32", "ozaki:int8:fast:64"}
    same = cal.refit(prof, "median")
    assert same.fp64_tflops == pytest.approx(prof.fp64_tflops)
    assert same.phases.keys() == prof.phases.keys()
    for scheme, costs in same.phases.items():
        assert vars(costs) == pytest.approx(vars(prof.phases[scheme]))
    low = cal.refit(prof, "min")  # the pooled cpu-blas samples: min <= median, rate >=
    assert low.meta["calibration"]["statistic"] == "min"
    assert low.fp64_tflops == pytest.approx(prof.fp64_tflops)  # one native run each
    pooled = "cpu-blas (pooled with ozaki products)"
    for n, t in prof.meta["calibration"]["engine_seconds"][pooled].items():
        assert low.meta["calibration"]["engine_seconds"][pooled][n] <= t
    with pytest.raises(ValueError, match="statistic"):
        cal.refit(prof, "mean")
    assert json.dumps(prof.meta, sort_keys=True) == before  # the refitted profile is new
    assert low.meta["calibration"]["refit_from"] == str(quick_profile)
    assert "refit_from" not in prof.meta["calibration"]


def test_restate_rows_with_min(quick_profile):
    prof = load_profile(quick_profile)
    rows = [{"n": 64, "scheme": "native", "mode": "", "num_moduli": None, "gemms": 1,
             "measured_runs": [3.0, 1.0, 2.0]},
            {"n": 64, "scheme": "int8", "mode": "fast", "num_moduli": 16, "gemms": 16,
             "measured_runs": [5.0, 4.0, 6.0], "measured_phases": {}}]
    lo, med = cal.restate(rows, prof, "min"), cal.restate(rows, prof, "median")
    assert [r["measured_s"] for r in lo] == [1.0, 4.0] and [r["measured_s"] for r in med] == [2.0, 5.0]
    assert lo[1]["predicted_s"] == pytest.approx(prof.predict_gemm("int8", 16, "fast", 64, 64, 64, engine="cpu-blas").total_s)
    assert "measured_phases" not in lo[1] and lo[0]["ratio"] == pytest.approx(lo[0]["predicted_s"])


def test_refined_gemms_of_a_record():
    """The refinement's FP64 GEMMs from a cpu-blas record: ``gemms - N - 1``."""
    from tme_model.calibration.fitting import refined_gemms

    rec = {"num_moduli": 16, "refined_block": [40, 50]}
    assert refined_gemms({**rec, "gemms": 18}) == 1  # G' only: no zero in the lines
    assert refined_gemms({**rec, "gemms": 20}) == 3  # G' and both partial U' GEMMs
    assert refined_gemms(rec) == 1  # an older record without the count
    assert refined_gemms({"num_moduli": 16, "refined_block": [0, 0], "gemms": 17}) == 1

"""Tests of tme_model: database, kernels, schemes, the model against its sympy closed
forms, the TME paper's figures as its inputs determine them, profiles, and the CLIs."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tme_model import schemes, symbolic
from tme_model import workloads as K
from tme_model.cli import calibrate_main, plot_main, table_main
from tme_model.model import Emulation, crossover, native_tflops, predict
from tme_model.profile import PhaseCosts, Profile
from tme_model.profile_file import dump_profile, load_profile
from tme_model.scenario import RECON_FLOPS_PER_MODULUS, Scenario
from tme_model.specs import (FIELDS, Device, Figure, MissingFigureError, TMEError,
                             UnknownDeviceError, get_device, load_devices)

DEVICES = load_devices()
VENDOR = ["a100", "h100", "h200", "gh200", "b200", "gb200", "b300", "gb300", "rubin",
          "rtx4090", "rtx5090", "mi300x", "mi355x"]
PAPER = ["paper:h100", "paper:b200", "paper:b300", "paper:r200"]


def device(p64: float, plow: float, bw: float, key: str = "synthetic", vec: float | None = None) -> Device:
    """A device with FP64 matrix ``p64`` (vector ``vec`` or the same), FP8 ``plow``, ``bw``."""
    figs = {"fp64_matrix": Figure(p64), "fp64_vector": Figure(vec or p64),
            "fp8": Figure(plow), "mem_bw": Figure(bw)}
    return Device(key, key, figures=figs)


def run(main, argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def fails(main, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def paper(preset: str, gpu: str, kernel: str):
    sc, dev = Scenario.preset(preset), DEVICES[gpu]
    (kern,) = sc.kernels([kernel])
    return predict(kern, dev, sc.emulation(dev, kern))


# ---------------------------------------------------------------- hardware database

def test_database_has_every_device_with_sourced_figures():
    assert set(VENDOR + PAPER) <= set(DEVICES)
    for dev in DEVICES.values():
        assert dev.get("mem_bw") is not None, dev.key
        for name, fig in dev.figures.items():
            assert name in FIELDS
            assert fig.source and fig.source_text, (dev.key, name)
            if fig.supported:
                assert fig.value > 0
            else:
                assert fig.value is None
            if fig.range is not None:
                assert fig.range[0] <= fig.value <= fig.range[1]
                assert fig.note, (dev.key, name, "a range needs a note")
            if name not in ("mem_bw", "mem_size") and fig.supported:
                assert fig.dense is True, (dev.key, name)


def test_unknown_figures_are_missing_not_zero():
    assert DEVICES["rubin"].get("fp8") is None and "fp8" not in DEVICES["rubin"].figures
    assert DEVICES["mi355x"].get("fp64_matrix") is None
    a100_fp8 = DEVICES["a100"].figures["fp8"]
    assert a100_fp8.supported is False and a100_fp8.value is None
    with pytest.raises(MissingFigureError, match="no such unit"):
        DEVICES["a100"].require("fp8")
    with pytest.raises(MissingFigureError, match="not known"):
        DEVICES["rubin"].require("int8")
    # sources are resolved to the reference's citation text
    assert "fibermall" in DEVICES["b300"].figures["fp8"].source_text
    assert "2606.06510" in DEVICES["paper:b300"].figures["fp8"].source_text


def test_p64_is_max_of_vector_and_matrix_for_gemm_only():
    h100 = DEVICES["paper:h100"]
    assert h100.p64(True) == 67 and h100.p64(False) == 34
    b300 = DEVICES["paper:b300"]
    assert b300.p64(True) == 1.3 and b300.p64(False) == 1.3  # 1.3 vector beats 1.2 tensor
    assert DEVICES["mi355x"].p64(True) == 78.6  # matrix unknown: vector


def test_user_specs_add_and_override(tmp_path):
    toml = tmp_path / "mine.toml"
    toml.write_text('[sources]\nlab = "our bench"\n[devices.b300]\nname = "B300 remeasured"\n'
                    'fp64_vector = { value = 1.1, source = "[lab]", dense = true }\n'
                    'fp8 = { value = 4000, source = "[lab]", dense = true }\n'
                    'mem_bw = { value = 7.5, source = "[lab]" }\n')
    js = tmp_path / "more.json"
    js.write_text(json.dumps({"devices": {"MyGPU": {"name": "x", "fp64_vector": 2.0,
                                                      "int8": 100, "mem_bw": 1.0}}}))
    devs = load_devices([toml, js])
    assert devs["b300"].get("fp8") == 4000 and devs["b300"].get("int8") is None
    assert devs["b300"].figures["fp8"].source_text == "[lab] our bench"
    assert devs["mygpu"].get("int8") == 100
    assert DEVICES["b300"].get("fp8") == 4500  # the shipped database is untouched
    # a user file may cite the shipped sources
    cite = tmp_path / "cite.toml"
    cite.write_text('[devices.y]\nname = "y"\nfp8 = { value = 10, source = "[7]" }\n')
    shipped_7 = load_devices([cite])["y"].figures["fp8"].source_text
    assert shipped_7.startswith("[7] ") and len(shipped_7) > 6
    bad = tmp_path / "bad.toml"
    for figure, msg in (("{ value = 0 }", "'fp8' must be a positive number"),
                        ('{ value = "a" }', "'fp8' must be a positive number"),
                        ("{ supported = false, range = [1, 2] }", "unsupported but has a value or range"),
                        ("{ value = 3, range = [1] }", "range must be"),
                        ("{ value = 3, range = [4, 5] }", "outside its range")):
        bad.write_text(f'[devices.x]\nfp8 = {figure}\n')
        with pytest.raises(TMEError, match=msg):
            load_devices([bad])
    with pytest.raises(TMEError, match="not found"):
        load_devices([tmp_path / "nope.toml"])


def test_unknown_device_error_suggests_closest():
    with pytest.raises(UnknownDeviceError) as exc:
        get_device("b3000", DEVICES)
    msg = str(exc.value)
    assert "Did you mean 'b300'" in msg and "paper:r200" in msg and "mi355x" in msg
    assert get_device("B300", DEVICES).key == "b300"


# ------------------------------------------------------------------------- kernels

def test_first_principles_kernels():
    d = K.dense_gemm(4096)
    assert d.intensity == pytest.approx(4096 / 12) and d.n_out == 4096**2 and d.matrix
    g = K.dense_gemm(1000, 2000, 300)
    assert g.flops == 2 * 1000 * 2000 * 300 and g.bytes == 8 * (1000 * 300 + 300 * 2000 + 1000 * 2000)
    assert g.k == 300 and g.n_out == 1000 * 2000
    for batch in (1, 2, 8, 32):  # I -> 2B / 8 = B / 4 for a large shared matrix
        assert K.gemv(batch, 1 << 16, 1 << 16).intensity == pytest.approx(batch / 4, rel=1e-3)
    assert K.stencil7().intensity == pytest.approx(0.5)
    assert 0.15 < K.spmv().intensity < 1 / 6
    f = K.fft3d()
    assert f.intensity == pytest.approx(150 / 96) and f.k == 32
    assert f.work_ratio == pytest.approx(24 * 64 / 150)  # dense 32-point DFTs vs 5 N log2 N
    assert f.emulated_flops == f.gemm_flops and d.gemm_flops is None and d.emulated_flops == d.flops
    with pytest.raises(ValueError, match="gemm_flops"):
        K.Kernel("x", 1.0, 1.0, 0.0, 1, gemm_flops=0.0)


def test_paper_intensities_only_in_presets_and_labelled():
    paper_kernels = Scenario.preset("paper-v3").kernels()
    assert [k.intensity for k in paper_kernels] == pytest.approx([50, 4, 1.5, 0.5, 0.2, 1.56])
    assert all("2606.06510" in k.intensity_source for k in paper_kernels)
    assert all(k.work_ratio == 1 for k in paper_kernels)
    assert all(k.intensity_source == "first principles" for k in Scenario().kernels())


def test_parse_kernel_specs():
    assert K.parse_kernel("dgemm:1024x512x256").flops == 2 * 1024 * 512 * 256
    assert K.parse_kernel("dgemm:2048").intensity == pytest.approx(2048 / 12)
    assert K.parse_kernel("gemv-b16").name == "gemv-b16"
    for bad, msg in (("gemm", "unknown kernel"), ("dgemm:2x3", "N or MxNxK"), ("dgemm:0", "positive")):
        with pytest.raises(ValueError, match=msg):
            K.parse_kernel(bad)
    with pytest.raises(ValueError, match="intensity must be positive"):
        K.intensity_kernel(0.0)


# ------------------------------------------------------------------------- schemes

def test_alpha_counts_gemms_as_ozaki_runs_them():
    for n in (2, 12, 16):
        assert schemes.alpha_for("int8", n, "fast") == n
        assert schemes.alpha_for("int8", n, "accurate") == n + 1
        assert schemes.alpha_for("fp8", n, "fast") == 3 * n
        assert schemes.alpha_for("fp8", n, "accurate") == 3 * n + 1
    assert schemes.alpha_for("fp8", 12, "accurate") == 37  # the paper's corrected alpha
    for bad in (0, 1, 21):  # ozaki runs 2 to 20 moduli
        with pytest.raises(ValueError, match="moduli"):
            schemes.alpha_for("int8", bad, "fast")


@pytest.mark.parametrize("scheme, engine", [("int8", "cpu-int8"), ("fp8", "cpu-fp8")])
@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_alpha_is_the_gemm_count_ozaki_reports(scheme, engine, mode):
    import numpy as np
    import ozaki

    rng = np.random.default_rng(7)
    A, B = rng.standard_normal((6, 40)), rng.standard_normal((40, 5))
    for n in (4, 9):
        _, info = ozaki.dgemm(A, B, scheme=scheme, engine=engine, mode=mode, num_moduli=n,
                              fallback="none", return_info=True)
        assert info.refined_block == (0, 0)  # no data-dependent refinement GEMMs
        assert info.gemms == schemes.alpha_for(scheme, n, mode)


def test_moduli_counts_for_fp64_grade():
    assert schemes.moduli_for("int8", "2x-native", 4096) == 16
    assert schemes.moduli_for("fp8", "2x-native", 1024) == 13
    assert schemes.moduli_for("int8", "certified") == 17
    assert schemes.moduli_for("fp8", "certified") == 15
    counts = [schemes.moduli_for("fp8", "2x-native", 2**e) for e in range(6, 25)]
    assert counts == sorted(counts) and counts[-1] > 13  # more bits for larger k
    for bad, msg in ((("int8", "best"), "grade"), (("fp64",), "scheme"), (("int8", "certified", 0), "k")):
        with pytest.raises(ValueError, match=msg):
            schemes.moduli_for(*bad)


@pytest.mark.parametrize("scheme", schemes.SCHEMES)
def test_scheme_facts_are_ozakis(scheme):
    """Counts, GEMMs per modulus and names come from ozaki, not from tables of our own."""
    import ozaki

    assert set(schemes.SCHEMES) <= set(ozaki.SCHEMES) and set(schemes.MODES) == set(ozaki.MODES)
    assert set(schemes.UNIT_ENGINES) == set(ozaki.SCHEMES)
    # the 2x-native grade is ozaki's automatic count at every k (int8 at k = 2**14, 2**16,
    # 2**20: 16, 16, 17), the certified grade a fixed number of moduli above it
    for e in (5, 10, 12, 13, 14, 16, 17, 20, 24):
        auto = ozaki.auto_num_moduli(scheme, 2**e)
        assert schemes.moduli_for(scheme, "2x-native", 2**e) == auto
        assert schemes.moduli_for(scheme, "certified", 2**e) == auto + schemes.GRADE_EXTRA_MODULI["certified"][scheme]
    if scheme == "int8":
        assert [schemes.moduli_for("int8", "2x-native", 2**e) for e in (14, 16, 20)] == [16, 16, 17]
    # GEMMs per modulus on every engine that runs the scheme, and alpha, as ozaki counts them
    for name in ozaki.available_engines():
        if scheme in ozaki.get_engine(name).schemes:
            per = schemes.gemms_per_modulus(scheme, name)
            assert per == ozaki.gemms_per_modulus(scheme, name)
            calls = ozaki.exact_gemms(4096, scheme=scheme, num_moduli=7, mode="fast", engine=name)
            assert len(calls) == 7 * per  # the calls a product makes on that engine
    unit = schemes.gemms_per_modulus(scheme)
    assert unit == {"int8": 1, "fp8": 3}[scheme]
    for n in (2, 13, 20):
        for mode in ozaki.MODES:
            calls = ozaki.exact_gemms(4096, scheme=scheme, num_moduli=n, mode=mode,
                                      engine=schemes.UNIT_ENGINES[scheme])
            assert schemes.alpha_for(scheme, n, mode) == len(calls) == unit * n + (mode == "accurate")


def test_substrate_choice_per_device():
    # H100: INT8 = FP8 peak, INT8 needs fewer GEMMs; B300: INT8 cut to ~150, FP8 wins.
    assert schemes.choose_scheme(DEVICES["h100"]).scheme == "int8"
    assert schemes.choose_scheme(DEVICES["b300"]).scheme == "fp8"
    assert schemes.choose_scheme(DEVICES["a100"]).scheme == "int8"  # no FP8 unit
    assert schemes.choose_scheme(DEVICES["rtx5090"]).scheme == "fp8"  # INT8 unknown
    for dev in DEVICES.values():
        cands = schemes.candidates(dev)
        if cands:
            best = schemes.choose_scheme(dev)
            assert all(best.ceiling >= c.ceiling for c in cands)
    with pytest.raises(MissingFigureError, match="paper:r200"):
        schemes.choose_scheme(DEVICES["rubin"])


# ------------------------------------------------- the TME paper's figures, from its inputs

def test_paper_v3_b300_row():
    gemm = paper("paper-v3", "paper:b300", "dgemm")
    assert gemm.alpha == 37 and gemm.emulated_tflops == pytest.approx(5000 / 37)
    assert gemm.emulated_tflops == pytest.approx(135.1, abs=0.05)
    assert gemm.regime == "compute/compute" and gemm.speedup == pytest.approx(135.135 / 1.3, rel=1e-4)
    # memory-bound kernels reach the memory roof 8 I TFLOP/s against native 1.3
    for name, want in (("gemv-b8", 24.6), ("gemv-b2", 9.23), ("stencil7", 3.08), ("spmv", 1.23)):
        p = paper("paper-v3", "paper:b300", name)
        assert p.regime == "compute/memory"
        assert p.emulated_tflops == pytest.approx(8 * p.intensity)
        assert p.speedup == pytest.approx(want, abs=0.05)  # the paper's 3 figures


def test_paper_h100_relative_figures():
    h100 = DEVICES["paper:h100"]
    for kern in Scenario.preset("paper-v3").kernels():
        p = paper("paper-v3", "paper:b300", kern.name)
        base = native_tflops(kern, h100)
        # "matches or exceeds H100 on every workload": 2.0x on GEMM, 8/3.35 elsewhere
        want = 135.135 / 67 if kern.name == "dgemm" else 8 / 3.35
        assert p.emulated_tflops / base == pytest.approx(want, rel=1e-3) and want >= 1
    regress = max(native_tflops(k, h100) / paper("paper-v3", "paper:b300", k.name).native_tflops
                  for k in Scenario.preset("paper-v3").kernels())
    assert regress == pytest.approx(67 / 1.3) and 50 < regress < 52  # "up to 50x"
    b200 = native_tflops(K.dense_gemm(), DEVICES["paper:b200"]) / native_tflops(K.dense_gemm(), DEVICES["paper:b300"])
    assert round(b200) == 31  # "a 31x regression from the B200"


def test_paper_v1_ceilings_and_its_inconsistency():
    b300 = paper("paper-v1", "paper:b300", "dgemm")
    r200 = paper("paper-v1", "paper:r200", "dgemm")
    assert b300.emulated_ceiling_tflops == pytest.approx(500)  # abstract: ~500 on B300
    assert r200.emulated_ceiling_tflops == pytest.approx(400)  # and ~400 on Rubin R200
    # at the table's I = 50 the B300 GEMM is memory-bound at 400, not 500
    assert b300.regime == "compute/memory" and b300.emulated_tflops == pytest.approx(400)
    assert b300.ridge_emulated == pytest.approx(62.5)
    assert r200.regime == "compute/compute" and r200.emulated_tflops == pytest.approx(400)


def test_h100_fp8_alpha37_window_is_memory_compute():
    dev = DEVICES["paper:h100"]
    emu = Scenario.preset("paper-v3").emulation(dev, K.dense_gemm())
    p = predict(K.intensity_kernel(18.0, matrix=True), dev, emu)
    assert p.regime == "memory/compute"
    assert p.speedup == pytest.approx(1979 / 37 / (18 * 3.35)) and p.speedup < 1
    assert p.crossover.kind == "never" and p.break_even_beta is None


# ------------------------------------------------------ the model vs its sympy forms

def test_symbolic_forms_have_expected_structure():
    import sympy as sp

    f = symbolic.derive()
    P64, Plow, B, alpha, beta, I = sp.symbols("P64 Plow B alpha beta I", positive=True)
    assert sp.simplify(f["ridge_native"] - P64 / B) == 0
    assert sp.simplify(f["ridge_emul"] - beta * Plow / (alpha * B)) == 0
    assert sp.simplify(f["speedup_compute_compute"] - Plow / (alpha * P64)) == 0
    assert sp.simplify(f["crossover_gamma0"] - beta * P64 / B) == 0
    assert set(symbolic.latex()) == set(f)


positive = st.floats(min_value=1e-3, max_value=1e3)


@settings(max_examples=60, deadline=None)
@given(w=st.floats(1e6, 1e15), i=st.floats(1e-2, 1e4), n_out=st.floats(0, 1e9),
       p64=positive, plow=st.floats(1.0, 1e4), bw=st.floats(0.1, 30),
       alpha=st.floats(1, 100), beta=st.floats(1, 20), gamma=st.floats(0, 1e-10))
def test_numeric_model_matches_sympy(w, i, n_out, p64, plow, bw, alpha, beta, gamma):
    q = w / i
    kern = K.Kernel("k", w, q, n_out, 64)
    p = predict(kern, device(p64, plow, bw), Emulation("fp8", alpha, beta, gamma))
    args = dict(W=w, Q=q, I=i, P64=p64 * 1e12, Plow=plow * 1e12, B=bw * 1e12,
                alpha=alpha, beta=beta, gamma=gamma, n_out=n_out)
    f = {k: symbolic.lambdified(k)(*(args[a] for a in symbolic.ARGUMENTS))
         for k in ("t_native", "t_emul", "ridge_native", "ridge_emul", "crossover",
                   "wins_if", "break_even_beta", "p_native", "p_emul")}
    assert p.native_s == pytest.approx(f["t_native"], rel=1e-12)
    assert p.emulated_s == pytest.approx(f["t_emul"], rel=1e-12)
    assert p.ridge_native == pytest.approx(f["ridge_native"]) and p.ridge_emulated == pytest.approx(f["ridge_emul"])
    if gamma == 0:
        assert p.native_tflops * 1e12 == pytest.approx(f["p_native"])
        assert p.emulated_tflops * 1e12 == pytest.approx(f["p_emul"])
    margin = f["wins_if"] * p64 * 1e12  # relative to 1/P64
    if margin > 1e-9:
        assert p.crossover.kind == "above" and p.crossover.intensity == pytest.approx(f["crossover"])
    elif margin < -1e-9:
        assert p.crossover.kind == "never"
    if p.break_even_beta is not None:
        assert p.break_even_beta == pytest.approx(f["break_even_beta"])
        slower = predict(kern, device(p64, plow, bw), Emulation("fp8", alpha, p.break_even_beta, gamma))
        assert slower.speedup == pytest.approx(1.0, rel=1e-9)  # break-even means break-even


@settings(max_examples=40, deadline=None)
@given(i=st.floats(1e-3, 1e5), p64=positive, plow=st.floats(1, 1e4), bw=st.floats(0.1, 30),
       alpha=st.floats(1, 100), beta=st.floats(1, 20))
def test_regimes_and_their_speedups(i, p64, plow, bw, alpha, beta):
    # at a ridge both regimes give the same time: the label is a float coin toss
    assume(not math.isclose(i, p64 / bw, rel_tol=1e-9)
           and not math.isclose(i, beta * plow / (alpha * bw), rel_tol=1e-9))
    p = predict(K.intensity_kernel(i), device(p64, plow, bw), Emulation("fp8", alpha, beta))
    nat = "compute" if i >= p64 / bw else "memory"
    emu = "compute" if i >= beta * plow / (alpha * bw) else "memory"
    assert p.regime == f"{nat}/{emu}"
    args = dict(W=1.0, Q=1.0, I=i, P64=p64, Plow=plow, B=bw, alpha=alpha, beta=beta, gamma=0.0, n_out=0.0)
    want = symbolic.lambdified(f"speedup_{nat}_{emu}")(*(args[a] for a in symbolic.ARGUMENTS))
    assert p.speedup == pytest.approx(want, rel=1e-9)
    # emulation wins exactly above the crossover when the ceiling beats native
    cross = p.crossover
    if cross.kind == "above" and not math.isclose(i, cross.intensity, rel_tol=1e-9):
        assert (p.speedup > 1) == (i > cross.intensity)


def test_crossover_ties_and_never():
    tie = crossover(p64=100.0, plow=1000.0, bmem=10.0, alpha=10.0, beta=1.0)
    assert tie.kind == "tie" and tie.intensity == pytest.approx(10.0) and tie.ties_below
    assert "ties" in tie.describe()
    never = crossover(p64=100.0, plow=900.0, bmem=10.0, alpha=10.0, beta=1.0)
    assert never.kind == "never" and never.intensity is None and never.ties_below
    assert not crossover(p64=100.0, plow=900.0, bmem=10.0, alpha=10.0, beta=1.5).ties_below
    above = crossover(p64=100.0, plow=2000.0, bmem=10.0, alpha=10.0, beta=2.0)
    assert above.kind == "above" and above.intensity == pytest.approx(20.0) and not above.ties_below
    # an overhead moves the crossover right: beta P64 / (B (1 - g P64))
    late = crossover(p64=100.0, plow=2000.0, bmem=10.0, alpha=10.0, beta=2.0, overhead_per_flop=0.004)
    assert late.intensity == pytest.approx(20.0 / 0.6)
    # a tie at beta = 1 below the native ridge: both memory-bound, speedup exactly 1
    p = predict(K.intensity_kernel(0.01), device(100, 2000, 10), Emulation("fp8", 10, 1.0))
    assert p.regime == "memory/memory" and p.speedup == 1.0 and p.crossover.ties_below


@pytest.mark.parametrize("field,value", [("alpha", 0.5), ("beta", 0.99), ("gamma", -1e-12),
                                         ("alpha", float("nan"))])
def test_invalid_parameters_are_named(field, value):
    kwargs = {"scheme": "fp8", "alpha": 2.0, field: value}
    with pytest.raises(ValueError, match=field):
        Emulation(**kwargs)
    if field in ("alpha", "beta", "gamma"):
        with pytest.raises(ValueError, match=field):
            Scenario(**{field: value})


# ------------------------------------------------------------ scenarios and gamma

def test_gamma_estimate_and_presets():
    dev = DEVICES["b300"]
    emu = Scenario().emulation(dev, K.stencil7())
    assert emu.gamma_source == "estimate" and emu.scheme == "fp8" and emu.moduli == 13
    assert emu.gamma == pytest.approx(RECON_FLOPS_PER_MODULUS * 13 / 1.25e12)
    p = predict(K.fft3d(), dev, Scenario().emulation(dev, K.fft3d()))
    assert p.emulated_limiter == "reconstruction"  # the 3-D FFT is gamma-bound
    assert Scenario.preset("paper-v3").emulation(dev, K.dense_gemm()).gamma == 0
    assert Scenario.preset("paper-v3", beta=2.0).emulation(dev, K.dense_gemm()).beta == 2.0
    direct = Scenario(alpha=20.0).emulation(DEVICES["h100"], K.dense_gemm())
    assert direct.alpha == 20.0 and direct.moduli is None
    with pytest.raises(ValueError, match="moduli needs an explicit scheme"):
        Scenario(moduli=14)
    with pytest.raises(ValueError, match="unknown preset"):
        Scenario.preset("paper-v2")


# ------------------------------------------------------------------- profiles

def write_profile(path, **over):
    data = {"schema": "tme-profile/1", "description": "test box", "fp64_tflops": 1.0,
            "mem_tbps": 0.05, "lowp_tflops": {"int8": {"blas": 0.8, "numba": 0.2}, "fp8": {"sim": 0.1}},
            "phases": {"int8": {"recon_s_per_output_modulus": 1e-9, "residue_s_per_element_modulus": 2e-9,
                                "scale_s_per_element": 1e-9, "fixed_s": 1e-4}}}
    data.update(over)
    path.write_text(json.dumps(data))
    return path


def test_profile_loads_as_local_device(tmp_path):
    prof = load_profile(write_profile(tmp_path / "p.json"))
    dev = prof.device()
    assert dev.key == "local" and dev.get("int8") == 0.8 and dev.get("fp8") == 0.1
    assert dev.get("fp64_vector") == 1.0 and dev.bandwidth() == 0.05
    emu = Scenario(scheme="int8", moduli=16).emulation(dev, K.dense_gemm(1024))
    assert emu.gamma_source == "profile" and emu.gamma == pytest.approx(16e-9)
    assert emu.residue_s == pytest.approx(1e-9 + 16 * 2e-9) and emu.fixed_s == 1e-4
    t = prof.predict_gemm("int8", 16, "fast", 1000, 2000, 300)
    assert t.gemm_s == pytest.approx(16 * 2 * 1000 * 2000 * 300 / 0.8e12)
    assert t.recon_s == pytest.approx(1e-9 * 16 * 1000 * 2000)
    assert t.residue_s == pytest.approx(2e-9 * 16 * (1000 * 300 + 300 * 2000))
    assert t.total_s == pytest.approx(t.scale_s + t.residue_s + t.gemm_s + t.recon_s + 1e-4)
    dump_profile(prof, tmp_path / "q.json")
    again = load_profile(tmp_path / "q.json")
    assert again.lowp_tflops == prof.lowp_tflops and again.phases == prof.phases
    assert again.meta["description"] == "test box"


@pytest.mark.parametrize("over,msg", [({"schema": "x"}, "schema"), ({"mem_tbps": -1}, "mem_tbps"),
                                      ({"lowp_tflops": {}}, "lowp_tflops"),
                                      ({"phases": {"int8": {"recon_s": 1}}}, "unknown keys")])
def test_profile_errors_name_the_key(tmp_path, over, msg):
    with pytest.raises(TMEError, match=msg):
        load_profile(write_profile(tmp_path / "p.json", **over))


def test_profile_without_optional_keys():
    prof = Profile("local", 2.0, 2.0, 0.1, {"fp8": {"e": 1.0}})
    assert prof.device().get("int8") is None and prof.predict_gemm("fp8", 13, "accurate", 8, 8, 8).recon_s == 0
    assert PhaseCosts().fixed_s == 0


# ------------------------------------------------------------------------- CLIs

def test_table_json_csv_markdown(capsys):
    code, out, _ = run(table_main, ["--gpu", "paper:b300", "--preset", "paper-v3", "--format", "json",
                                    "--baseline", "paper:h100"], capsys)
    rows = json.loads(out)
    assert code == 0 and [r["kernel"] for r in rows] == list(K.DEFAULT_KERNELS)
    need = {"gpu", "kernel", "intensity", "native_tflops", "emulated_tflops", "speedup", "regime",
            "crossover_intensity", "emulated_vs_baseline"}
    assert all(need <= set(r) for r in rows)
    assert rows[0]["emulated_tflops"] == pytest.approx(5000 / 37)
    assert rows[0]["emulated_vs_baseline"] == pytest.approx(5000 / 37 / 67)
    _, out, _ = run(table_main, ["--gpu", "b300", "--gpu", "h100", "--format", "csv",
                                 "--kernels", "dgemm,spmv", "--intensity", "3"], capsys)
    recs = list(csv.DictReader(io.StringIO(out)))
    assert [(r["gpu"], r["kernel"]) for r in recs] == [
        (g, k) for g in ("b300", "h100") for k in ("dgemm", "spmv", "I=3")]
    _, out, _ = run(table_main, ["--gpu", "h100", "--format", "markdown", "--scheme", "fp8",
                                 "--moduli", "12", "--mode", "accurate", "--gamma", "0"], capsys)
    assert "| dgemm |" in out and "never" in out  # FP8 at alpha 37 never beats H100's 67


@pytest.mark.slow
def test_plot_writes_png_with_one_axes_per_gpu(tmp_path, capsys, monkeypatch):
    import tme_model.plot as plot

    figs = []
    real = plot.save_figure
    monkeypatch.setattr(plot, "save_figure", lambda fig, path, dpi=110: (figs.append(fig), real(fig, path, dpi)))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(plot_main, ["--gpu", "b300", "--gpu", "paper:h100", "--dpi", "40"], capsys)
    png = tmp_path / "tme-b300_paper-h100.png"
    assert code == 0 and str(png) in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    assert len(figs[-1].axes) == 2
    assert "[b300]" in figs[-1].axes[0].get_title() and "[paper:h100]" in figs[-1].axes[1].get_title()
    # labels are placed so that none overlaps another, inside the panel
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figs[-1]).get_renderer()  # the figure was closed
    for ax in figs[-1].axes:
        boxes = [t.get_window_extent(renderer) for t in ax.texts]
        frame = ax.get_window_extent(renderer)
        assert len(boxes) >= 8  # ridges, crossover, one per kernel
        for i, a in enumerate(boxes):
            assert frame.x0 <= a.x0 and a.x1 <= frame.x1 and frame.y0 <= a.y0 and a.y1 <= frame.y1
            assert not any(a.overlaps(b) for b in boxes[i + 1:]), ax.texts[i].get_text()
    assert figs[-1].axes[0].get_xlabel() == "Arithmetic intensity [FLOP/byte]"
    assert figs[-1].axes[0].get_xscale() == "log" and figs[-1].axes[0].get_yscale() == "log"
    svg = tmp_path / "one.svg"
    run(plot_main, ["--gpu", "paper:b300", "--preset", "paper-v3", "-o", str(svg)], capsys)
    assert len(figs[-1].axes) == 1 and b"<svg" in svg.read_bytes()[:2000]
    labels = [t.get_text() for t in figs[-1].axes[0].texts]
    assert any(t.startswith("dgemm x104") for t in labels)  # the kernel pair and its speedup
    assert any(t.startswith("crossover I=0.163") for t in labels)


def test_cli_errors(capsys, tmp_path):
    err = fails(table_main, ["--gpu", "h10"], capsys)
    assert "unknown device 'h10'" in err and "Did you mean" in err and "Known devices" in err
    for args, word in ((["--alpha", "0.5"], "alpha"), (["--beta", "0.5"], "beta"),
                       (["--gamma", "-1"], "gamma"), (["--intensity", "-2"], "intensity"),
                       (["--intensity", "0"], "intensity")):
        assert word in fails(table_main, ["--gpu", "b300"] + args, capsys)
    assert "--scheme" in fails(table_main, ["--gpu", "b300", "--preset", "paper-v3", "--scheme", "int8"], capsys)
    assert "paper:r200" in fails(table_main, ["--gpu", "rubin"], capsys)
    assert "--gpu" in fails(plot_main, [], capsys)
    assert ".png" in fails(plot_main, ["--gpu", "b300", "-o", str(tmp_path / "x.jpg")], capsys)
    assert "unknown kernel" in fails(table_main, ["--gpu", "b300", "--kernels", "dgemm,lu"], capsys)


def test_list_gpus_profile_and_calibrate(capsys, tmp_path):
    code, out, _ = run(plot_main, ["--list-gpus"], capsys)
    assert code == 0 and all(k in out for k in VENDOR + PAPER)
    prof = write_profile(tmp_path / "p.json")
    code, out, _ = run(table_main, ["--profile", str(prof), "--format", "json", "--kernels", "dgemm:1024"], capsys)
    (row,) = json.loads(out)
    assert row["gpu"] == "local" and row["scheme"] == "int8" and row["plow_tflops"] == 0.8
    assert "--validate" in fails(calibrate_main, ["--profile", str(prof)], capsys)


@pytest.mark.slow
def test_import_is_light():
    code = ("import sys, tme_model; bad = [m for m in ('matplotlib', 'sympy', 'ozaki', 'fft', 'tqdm') "
            "if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
    # no module of the package imports ozaki or an extra at load (docs/architecture.rst,
    # "Packages and imports")
    code = ("import importlib, pkgutil, sys, tme_model; "
            "[importlib.import_module(m.name) for m in pkgutil.walk_packages(tme_model.__path__, 'tme_model.') "
            "if not m.name.endswith('__main__')]; "
            "bad = [m for m in ('matplotlib', 'sympy', 'ozaki', 'fft', 'tqdm') if m in sys.modules]; "
            "assert not bad, bad; assert 'tme_model.calibration.fitting' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_extras_are_named(monkeypatch, capsys, tmp_path):
    from tme_model.extras import MissingExtraError, require

    for module, extra in (("matplotlib", "plot"), ("sympy", "symbolic"), ("tqdm", "calibrate")):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
        with pytest.raises(MissingExtraError, match=rf"ozaki-emu\[{extra}\]"):
            require(module)
    with pytest.raises(MissingExtraError, match="symbolic"):
        symbolic.latex()
    err = fails(plot_main, ["--gpu", "b300", "-o", str(tmp_path / "x.png")], capsys)
    assert "ozaki-emu[plot]" in err and not (tmp_path / "x.png").exists()
    err = fails(calibrate_main, ["--quick", "-o", str(tmp_path / "p.json")], capsys)
    assert "ozaki-emu[calibrate]" in err and "--no-progress" in err
    with pytest.raises(ValueError, match="module must be one of"):
        require("numpy")


def _docs_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "_scripts" / "tme_model_page.py"
    if not path.exists():
        pytest.skip("docs not in this checkout")
    spec = importlib.util.spec_from_file_location("tme_model_page", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_tables_are_current():
    _docs = _docs_script()
    if not _docs.PAGE.exists():
        pytest.skip("docs not present")
    import sympy

    stale = _docs.stale_blocks()
    if _docs.forms_printed_by() != sympy.__version__:  # sympy's printing varies by version
        stale = [b for b in stale if b != "forms"]
    assert not stale, f"run python docs/_scripts/tme_model_page.py to refresh {stale}"
    text = _docs.PAGE.read_text()
    assert all(f"``{key}``" in text for key, _, _ in _docs.FORMS)
    for name in _docs.FIGURES:  # figures the page shows are generated and present
        assert f"_static/{name}" in text and (_docs.DOCS / "_static" / name).stat().st_size > 1000

"""Tests of the HPL-style benchmark (benchmarks/hpl.py) on tiny orders: its HPL lines, the
scaled residual it prints against one recomputed here from the problem's definition, the
JSON it writes, the refined solve's line (or the note when ozaki has none), the
instruction-set summary, and its usage errors."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import subprocess

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import ozaki
from benchmarks import bench_common as bc
from benchmarks import hpl
from ozaki import linalg

N, NB, SEED = 80, 32, 7
TV = re.compile(r"^(ozaki-full|ozaki-refine|scipy) +(\d+) +(\d+) +1 +1 +(\d+\.\d{4}) +"
                r"(\d\.\d{4}e[+-]\d\d)$")
RES = re.compile(r"^" + re.escape(hpl.RESIDUAL_LABEL) + r" +(\S+) \.\.\.\.\.\. (PASSED|FAILED)$")


def problem(n: int, seed: int):
    """HPL's problem as the benchmark documents it, built here independently."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(size=(n, n)) - 0.5
    return A, rng.uniform(size=n) - 0.5


def residual(A, x, b) -> float:
    """HPL's scaled residual with numpy's norms (eps = 2^-53)."""
    inf = np.inf
    return (np.linalg.norm(A @ x - b, inf)
            / (2.0 ** -53 * (np.linalg.norm(A, inf) * np.linalg.norm(x, inf)
                             + np.linalg.norm(b, inf)) * A.shape[0]))


def parse(out: str) -> list[dict]:
    """Each T/V line with the residual line that follows it (two lines below)."""
    lines, runs = out.splitlines(), []
    for i, line in enumerate(lines):
        m = TV.match(line)
        if m:
            assert lines[i + 1] == hpl.THIN
            r = RES.match(lines[i + 2])
            assert r, lines[i + 2]
            runs.append({"method": m[1], "n": int(m[2]), "nb": int(m[3]), "time": float(m[4]),
                         "gflops": float(m[5]), "residual": float(r[1]), "verdict": r[2]})
    return runs


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """One run of main on a tiny order, with the real ozaki (and its refined solve if any),
    its products emulated (not the small-product path: conftest's switch is per test)."""
    path = tmp_path_factory.mktemp("hpl") / "out.json"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), ozaki.set_small_products(False):
        code = hpl.main(["--n", str(N), "--nb", str(NB), "--seeds", str(SEED),
                         "--json", str(path), "--no-progress"])
    assert code == 0
    return buf.getvalue(), json.loads(path.read_text())


def test_lines_have_hpls_format_and_pass(bench):
    out, _ = bench
    runs = parse(out)
    want = ["ozaki-full", "scipy"] + (["ozaki-refine"] if hasattr(linalg, "solve_refined") else [])
    assert sorted(r["method"] for r in runs) == sorted(want)
    assert hpl.HEADER in out and out.count(hpl.HEADER) == len(runs)
    for r in runs:
        assert (r["n"], r["nb"], r["verdict"]) == (N, NB, "PASSED")
        assert 0 < r["residual"] < hpl.THRESHOLD
    if "ozaki-refine" not in want:
        assert "ozaki-refine: skipped" in out


def test_printed_residual_equals_one_recomputed_independently(bench):
    out, _ = bench
    printed = {r["method"]: r["residual"] for r in parse(out)}
    A, b = problem(N, SEED)
    # ozaki.linalg's bits depend only on the input, the block size and the options
    x = linalg.lu_solve(linalg.lu_factor(A, block_size=NB), b, block_size=NB)
    assert printed["ozaki-full"] == pytest.approx(residual(A, x, b), rel=1e-8)
    x = scipy.linalg.lu_solve(scipy.linalg.lu_factor(A), b)
    assert printed["scipy"] == pytest.approx(residual(A, x, b), rel=1e-8)


def test_json_schema_and_consistency(bench):
    out, data = bench
    assert data["benchmark"] == "hpl"
    assert {"cpu", "cores", "flags", "summary", "blas", "loadavg_before"} <= set(data["machine"])
    assert data["parameters"] == {"sizes": [N], "nb": NB, "seeds": [SEED], "repeat": 1,
                                  "eps": 2.0 ** -53,
                                  "threshold": 16.0, "P": 1, "Q": 1}
    printed = {r["method"]: r for r in parse(out)}
    by = {r["method"]: r for r in data["runs"]}
    assert set(by) == set(printed)
    for m, r in by.items():
        assert {"n", "nb", "seed", "seconds", "gflops", "residual", "passed", "norm_r", "norm_a",
                "norm_x", "norm_b"} <= set(r)
        assert r["gflops"] == pytest.approx(hpl.hpl_flops(N) / r["seconds"] / 1e9, rel=1e-12)
        assert f"{r['residual']:16.9g}".strip() == f"{printed[m]['residual']:.9g}"
        assert r["residual"] == pytest.approx(
            r["norm_r"] / (2.0 ** -53 * (r["norm_a"] * r["norm_x"] + r["norm_b"]) * N))
    full = by["ozaki-full"]
    assert full["ratio_to_scipy"] == pytest.approx(full["seconds"] / by["scipy"]["seconds"])
    assert 0 < full["emulated_share"] <= 1 and full["factor_info"]["emulated_products"] > 0
    assert full["factor_s"] + full["solve_s"] == pytest.approx(full["seconds"])
    (s,) = [x for x in data["summary"] if x["method"] == "ozaki-full"]
    assert s["median_s"] == full["seconds"] and s["passed"] == 1


@dataclasses.dataclass
class FakeRefineInfo:
    """The fields of ozaki.linalg's RefinementInfo that the benchmark reads."""
    iterations: int
    factor_num_moduli: int
    full_num_moduli: int
    backward_error: float
    converged: bool
    factor_info: linalg.LinalgInfo
    fallback_info: None = None


def test_refined_line_with_a_stand_in(monkeypatch, capsys, tmp_path):
    """The refined solve's line, its facts and ratios (a stand-in: one LU, one step of
    refinement), independent of whether ozaki has ``solve_refined`` yet."""
    calls = []

    def solve_refined(a, b, *, block_size, return_info, **opts):
        calls.append((block_size, return_info, opts))
        lu, piv, finfo = linalg.lu_factor(a, block_size=block_size, return_info=True, **opts)
        x = linalg.lu_solve((lu, piv), b, block_size=block_size, **opts)
        x += linalg.lu_solve((lu, piv), b - a @ x, block_size=block_size, **opts)
        return x, FakeRefineInfo(1, 4, 6, 1e-17, True, finfo)

    monkeypatch.setattr(linalg, "solve_refined", solve_refined, raising=False)
    path = tmp_path / "r.json"
    with ozaki.set_small_products(False):
        assert hpl.main(["--n", "64", "--nb", "32", "--mode", "fast", "--json", str(path),
                         "--no-progress"]) == 0
    out = capsys.readouterr().out
    runs = {r["method"]: r for r in parse(out)}
    assert runs["ozaki-refine"]["verdict"] == "PASSED"
    assert ("iterations 1, factor_num_moduli 4, full_num_moduli 6, backward_error 1e-17, "
            "converged True; >= ") in out
    assert "the full-count solve's time" in out
    assert calls and all(c == (32, True, {"mode": "fast"}) for c in calls)
    (r,) = [r for r in json.loads(path.read_text())["runs"] if r["method"] == "ozaki-refine"]
    assert r["info"]["factor_info"]["emulated_products"] > 0
    assert r["factorisation_emulated_share"] == pytest.approx(
        r["info"]["factor_info"]["emulated_seconds"] / r["seconds"])


def test_refined_note_when_ozaki_has_none_and_repeats(monkeypatch, capsys, tmp_path):
    monkeypatch.delattr(linalg, "solve_refined", raising=False)
    path = tmp_path / "r.json"
    assert hpl.main(["--n", "40", "--nb", "16", "--repeat", "3", "--json", str(path),
                     "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "ozaki-refine: skipped" in out and {r["method"] for r in parse(out)} == {
        "ozaki-full", "scipy"}
    data = json.loads(path.read_text())
    assert data["skipped"] and data["parameters"]["repeat"] == 3
    for r in data["runs"]:  # the fastest of three calls is reported
        assert len(r["samples_s"]) == 3 and r["seconds"] == min(r["samples_s"])


@given(arrays(np.float64, (5, 5), elements=st.floats(-4, 4)),
       arrays(np.float64, 5, elements=st.floats(-4, 4)),
       arrays(np.float64, 5, elements=st.floats(-4, 4)))
def test_scaled_residual_is_hpls_formula(A, x, b):
    got = hpl.scaled_residual(A, x, b)
    scale = np.linalg.norm(A, np.inf) * np.linalg.norm(x, np.inf) + np.linalg.norm(b, np.inf)
    if 2.0 ** -53 * scale * 5 == 0:  # x = b = 0, or underflow: no verdict
        assert np.isnan(got["residual"]) and not got["passed"]
        return
    assert got["residual"] == pytest.approx(residual(A, x, b), rel=1e-14, abs=0)
    assert got["passed"] == (got["residual"] < 16.0)


def test_instruction_set_summary(monkeypatch):
    flags = "fpu sse2 avx fma avx2 avx512f avx512dq avx512_vnni amx_tile amx_int8"
    text = f"Architecture: x86_64\nModel name: Test CPU\nFlags: {flags}\n"
    monkeypatch.setattr(subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=text))
    got = bc.isa()
    assert got["cpu"] == "Test CPU"
    assert got["flags"] == ["avx2", "fma", "avx512f", "avx512dq", "avx512_vnni", "amx_tile",
                            "amx_int8"]
    assert got["summary"] == "avx2, avx512f/dq/vnni, AMX"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0, stdout="Flags: sse2 avx2\n"))
    assert bc.isa()["summary"] == "avx2, no AMX"


@pytest.mark.parametrize("argv,words", [
    (["--n", "0"], "--n must be integers >= 1"),
    (["--n", "abc"], "--n must be integers"),
    (["--seeds", "-1"], "--seeds must be integers >= 0"),
    (["--nb", "0"], "--nb must be a positive integer"),
    (["--repeat", "0"], "--repeat must be a positive integer"),
    (["--engine", "no-such-engine"], "ozaki options"),
    (["--mode", "sloppy"], "ozaki options"),
])
def test_usage_errors(argv, words, capsys):
    with pytest.raises(SystemExit) as exc:
        hpl.main(argv + ["--no-progress"])
    assert exc.value.code == 2
    assert words in capsys.readouterr().err

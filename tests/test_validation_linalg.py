"""The linalg campaign of the validation suite: its matrices are what they claim, its
exact residuals and reference are exact (checked against Fractions), the quick tier
passes and is reported, and a wrong solver, construction or reference fails it."""

import json
import math
import types
from fractions import Fraction

import numpy as np
import pytest
import scipy.linalg as sla
from hypothesis import given, strategies as st

from ozaki import linalg
from validation import __main__ as cli
from validation.linalg import campaign, cases, reference
from validation.linalg.runner import main, run, write
from validation.metrics import round_fraction

U = 2.0 ** -53


def _case(family, n, kappa=None, seed=0):
    return cases.Case(f"{family}-test-n{n}-s{seed}", family, n, seed,
                      {"kappa": kappa} if kappa else {})


# -- the matrices ---------------------------------------------------------------------

@pytest.mark.parametrize("name", [c.name for c in cases.quick_cases()
                                  if c.family in ("svd", "spd")])
def test_condition_numbers_are_near_their_targets(name):
    c = cases.find(name)
    A, _, meta = cases.build(name)
    s = np.linalg.svd(A, compute_uv=False)
    assert c.kappa / 1.5 <= s[0] / s[-1] <= c.kappa * 1.5
    if c.family == "spd":
        assert np.array_equal(A, A.T) and np.linalg.eigvalsh(A).min() > 0
        assert np.linalg.cholesky(A).shape == A.shape


def test_the_largest_condition_number_survives_forming_a_larger_matrix():
    A, _, _ = cases.build(_case("svd", 512, kappa=1e14))
    s = np.linalg.svd(A, compute_uv=False)
    assert 1e14 / 1.5 <= s[0] / s[-1] <= 1e14 * 1.5


@pytest.mark.parametrize("family", ["rows", "cols", "rows-cols"])
def test_scalings_are_exact_powers_of_two_across_the_range(family):
    A, x0, meta = cases.build(_case(family, 200))
    er, ec = meta["row_exponents"], meta["col_exponents"]
    assert np.array_equal(A, np.ldexp(meta["A0"], er[:, None] + ec[None, :]))
    for e, scaled in ((er, "rows" in family), (ec, "cols" in family)):
        if scaled:
            assert e.min() == -cases.SCALE_RANGE and e.max() == cases.SCALE_RANGE
            assert len(np.unique(e)) > 100  # spread over the range, not two values
        else:
            assert not e.any()
    assert np.abs(meta["A0"]).max() <= 0.5
    # x0 undoes the column scaling: every term a_ij x0_j is the unscaled one times 2**e_i
    unscaled = np.ldexp(x0, ec)
    assert np.abs(unscaled).max() <= 0.5
    assert np.array_equal(A * x0, np.ldexp(meta["A0"] * unscaled, er[:, None]))


@given(n=st.integers(2, 72), seed=st.integers(0, 10 ** 6))
def test_pivot_family_pivots_at_every_step_and_eliminates_exactly(n, seed):
    A, _, meta = cases.build(_case("pivot", n, seed=seed))
    lu, piv = sla.lu_factor(A)
    assert np.array_equal(piv, np.full(n, n - 1))  # an interchange at every step k < n - 1
    # every operation of the elimination was exact: LAPACK returns the built factors
    assert np.array_equal(np.tril(lu, -1) + np.eye(n), meta["L"])
    assert np.array_equal(np.triu(lu), meta["U"])
    assert np.array_equal(np.roll(A, 1, axis=0), meta["L"] @ meta["U"])
    # without pivoting the first pivot would be at most 3/8 of the column's largest
    assert abs(A[0, 0]) <= 3 / 8 * np.abs(A[:, 0]).max()
    _, opiv = linalg.lu_factor(A, block_size=8)
    assert np.array_equal(opiv, piv)


def test_cases_are_rebuilt_from_their_names_and_names_are_unique():
    for tier in (cases.quick_cases(), cases.full_cases()):
        assert len({c.name for c in tier}) == len(tier)
    by_name = {}
    for c in cases.quick_cases() + cases.full_cases():
        assert by_name.setdefault(c.name, c) == c  # a name in both tiers is one case
    assert set(cases.FAMILIES) == {c.family for c in cases.quick_cases()}
    assert all(c.n <= 256 for c in cases.quick_cases())
    assert max(c.n for c in cases.full_cases()) == 2048
    A1, x1, _ = cases.build("svd-1e8-n256")
    A2, x2, _ = cases.build(cases.find("svd-1e8-n256"))
    assert np.array_equal(A1, A2) and np.array_equal(x1, x2)
    assert not np.array_equal(cases.build("hpl-n256")[0], cases.build("hpl-n256-s1")[0])
    with pytest.raises(KeyError):
        cases.find("hpl-n3")


# -- exact residuals and the reference --------------------------------------------------

@given(st.integers(1, 6), st.integers(0, 10 ** 6), st.sampled_from([0, 200, -200, 450]))
def test_exact_residual_is_the_exact_value_rounded_once(n, seed, shift):
    rng = np.random.default_rng(seed)
    A = np.ldexp(rng.standard_normal((n, n)), rng.integers(-40, 40, (n, n)) + shift)
    x = np.ldexp(rng.standard_normal(n), rng.integers(-40, 40, n) - shift)
    lo = x * rng.standard_normal(n) * 2.0 ** -60
    b = A @ x
    got = reference.exact_residual(A, x, b, lo)
    for i in range(n):
        exact = Fraction(b[i]) - sum(Fraction(A[i, j]) * (Fraction(x[j]) + Fraction(lo[j]))
                                     for j in range(n))
        assert got[i] == round_fraction(exact)
    assert np.array_equal(reference.rhs(A, x), -reference.exact_residual(A, x))


def test_exact_residual_refuses_products_beyond_the_split():
    with pytest.raises(ValueError, match="split"):
        reference.exact_residual(np.array([[2.0 ** 995]]), np.array([1.0]))
    with pytest.raises(ValueError, match="split"):
        reference.exact_residual(np.array([[2.0 ** -500]]), np.array([2.0 ** -500]))


def _fraction_solve(A, b):
    """Gauss-Jordan in rationals: the exact solution."""
    n = len(b)
    M = [[Fraction(v) for v in row] + [Fraction(bi)] for row, bi in zip(A, b)]
    for k in range(n):
        p = next(i for i in range(k, n) if M[i][k] != 0)
        M[k], M[p] = M[p], M[k]
        for i in range(n):
            if i != k and M[i][k] != 0:
                f = M[i][k] / M[k][k]
                M[i] = [a - f * c for a, c in zip(M[i], M[k])]
    return [M[i][n] / M[i][i] for i in range(n)]


@pytest.mark.parametrize("family, kappa", [("svd", 1e12), ("hpl", None), ("rows-cols", None)])
def test_reference_solution_matches_the_rational_solution(family, kappa):
    A, x0, _ = cases.build(_case(family, 10, kappa))
    b = reference.rhs(A, x0)
    ref = reference.reference_solution(A, b, x0)
    exact = _fraction_solve(A, b)
    top = max(abs(v) for v in exact)
    err = max(abs(Fraction(h) + Fraction(lo) - v) for h, lo, v in zip(ref["x"], ref["x_lo"], exact))
    assert ref["ok"] and float(err / top) <= reference.REF_LIMIT
    assert float(err / top) <= 4 * ref["error"] + U * U  # the estimate is the error's size


def test_metrics_are_consistent():
    A, x0, _ = cases.build(_case("hpl", 40))
    b = reference.rhs(A, x0)
    ref = reference.reference_solution(A, b, x0)
    x = sla.solve(A, b)
    m = reference.metrics(A, b, x, ref)
    assert m["hpl"] == pytest.approx(m["backward"] / (U * 40), rel=1e-12)
    assert 0 < m["componentwise"] and m["backward"] <= m["componentwise"] * 2
    assert 0 < m["forward"] < 1e-10
    # the reference's high part is the reference rounded: off by its low part, <= u |x|
    hi = reference.metrics(A, b, ref["x"], ref)["forward"]
    assert hi == pytest.approx(np.abs(ref["x_lo"]).max() / np.abs(ref["x"]).max(), rel=1e-12)
    assert 0 < hi <= U
    assert reference.metrics(A, b, np.full(40, np.nan), ref)["hpl"] == math.inf


# -- the campaign -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick tier, run once: ``(output folder, docs folder, results)``."""
    out = tmp_path_factory.mktemp("linalg-validation")
    res = run(cases.quick_cases(), "quick", progress=False)
    write(res, out / "v", docs=str(out / "docs"))
    return out / "v", out / "docs", json.loads((out / "v" / "linalg_results.json").read_text())


def test_quick_tier_passes_and_is_reported(quick):
    out, docs, res = quick
    assert res["failures"] == []
    # the known issues, if any, are the refined solve's on the scaled matrices
    assert {(f["family"], f["solver"]) for f in res["known_issues"]} <= {
        (fam, "refined") for fam in ("rows", "cols", "rows-cols")}
    assert [c["name"] for c in res["cases"]] == [c.name for c in cases.quick_cases()]
    for c in res["cases"]:
        assert c["construction"]["ok"] and c["reference"]["ok"]
        assert [r["routine"] for r in c["routines"]] == list(cases.solvers(cases.find(c["name"])))
        for r in c["routines"]:
            o, s = r["ozaki"], r["scipy"]
            assert o["hpl"] < campaign.HPL_THRESHOLD and s["hpl"] < campaign.HPL_THRESHOLD
            assert o["emulated_products"] > 0 and o["compensated_products"] == 0
            if c["family"] in ("hpl", "svd", "pivot", "spd"):
                assert o["hpl"] <= campaign.RATIO * s["hpl"]
            if "same_as" in r:
                assert r["same_as"]["bitwise"]
        if c["family"] == "pivot":
            assert c["construction"]["pivoted_every_step"]
    md = (out / "linalg_report.md").read_text()
    assert md.startswith("# Linear algebra validation report")
    assert "| hpl-n256 | 256 | 32 |" in md and "## Failures\n\nNone." in md
    assert (out / "linalg_residuals.png").stat().st_size > 10_000
    rst = (docs / "_generated" / "validation_linalg_report.rst").read_text()
    assert "python -m validation.linalg" in rst
    assert ".. image:: _generated/validation_linalg_residuals.png" in rst
    assert (docs / "_generated" / "validation_linalg_residuals.png").exists()


def _perturb(monkeypatch, name, rel=1e-9):
    good = getattr(linalg, name)

    def wrong(*args, **kwargs):
        out = good(*args, **kwargs)
        if isinstance(out, tuple):
            return (out[0] * (1 + rel),) + out[1:]
        return out * (1 + rel)
    monkeypatch.setattr(linalg, name, wrong)


def test_a_wrong_solution_fails_and_is_reported(monkeypatch, tmp_path, capsys):
    _perturb(monkeypatch, "lu_solve")
    rc = main(["--case", "hpl-n64", "--out", str(tmp_path)])
    assert rc == 1
    res = json.loads((tmp_path / "linalg_results.json").read_text())
    checks = {(f["routine"], f["solver"], f["check"]) for f in res["failures"]}
    assert ("lu", "ozaki", "hpl") in checks and ("lu", "ozaki", "vs-scipy") in checks
    assert not any(f["routine"] == "solve" for f in res["failures"])  # solve was not touched
    assert "FAIL hpl: case hpl-n64 lu (ozaki)" in capsys.readouterr().out
    md = (tmp_path / "linalg_report.md").read_text()
    assert "| hpl-n64 | lu | ozaki | hpl |" in md and "**NO**" in md


def test_a_small_loss_of_accuracy_fails_against_scipy(monkeypatch):
    _perturb(monkeypatch, "solve", rel=4e-14)  # within HPL's 16, not within 4x scipy's
    rec = campaign.run_case(cases.find("hpl-n64"))
    checks = {(f["routine"], f["check"]) for f in rec["failures"]}
    assert checks == {("solve", "vs-scipy"), ("solve", "vs-scipy-componentwise")}


def test_an_exception_in_ozaki_fails(monkeypatch):
    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("1-th leading minor of the array is not positive definite")
    monkeypatch.setattr(linalg, "cho_factor", broken)
    rec = campaign.run_case(cases.find("spd-1e2-n256"))
    (f,) = rec["failures"]
    assert (f["routine"], f["check"]) == ("cho", "raised") and "LinAlgError" in f["note"]


def test_construction_and_reference_failures_are_caught(monkeypatch):
    c = cases.find("svd-1e8-n256")
    assert not campaign.construction(c, np.eye(256), {})["ok"]
    A, _, meta = cases.build("pivot-n256")
    assert campaign.construction(cases.find("pivot-n256"), A, meta)["ok"]
    assert not campaign.construction(cases.find("pivot-n256"), A[::-1].copy(), meta)["ok"]
    monkeypatch.setattr(reference, "MAX_STEPS", 0)  # the reference is x0: off by kappa u
    rec = campaign.run_case(cases.find("svd-1e8-n256"))
    assert [f["check"] for f in rec["failures"]] == ["reference"]


def test_the_refined_solver_is_a_third_column(monkeypatch, tmp_path):
    def solve_refined(a, b, *, tol=None, return_info=False, **options):
        x = linalg.solve(a, b, **options) * (1 + 1e-9)
        info = types.SimpleNamespace(iterations=3, converged=True)
        return (x, info) if return_info else x
    monkeypatch.setattr(linalg, "solve_refined", solve_refined, raising=False)
    res = run([cases.find("hpl-n64")], "selected", progress=False)
    (solve,) = [r for r in res["cases"][0]["routines"] if r["routine"] == "solve"]
    assert solve["refined"]["iterations"] == 3 and solve["refined"]["converged"] is True
    assert {(f["solver"], f["check"]) for f in res["failures"]} >= {("refined", "hpl"),
                                                                   ("refined", "tol")}
    assert all(f["solver"] == "refined" for f in res["failures"])
    write(res, tmp_path)
    md = (tmp_path / "linalg_report.md").read_text()
    assert "## The refined solve" in md and "ozaki / scipy / refined" in md


def test_known_issues_are_reported_apart(monkeypatch, tmp_path):
    _perturb(monkeypatch, "lu_solve")
    monkeypatch.setattr(campaign, "KNOWN_ISSUES", (
        {"case": "hpl-n64", "routine": "lu", "solver": "ozaki", "issue": "planted"},))
    res = run([cases.find("hpl-n64")], "selected", progress=False)
    assert res["failures"] == [] and {f["check"] for f in res["known_issues"]} >= {"hpl"}
    assert all(f["issue"] == "planted" for f in res["known_issues"])
    write(res, tmp_path)
    md = (tmp_path / "linalg_report.md").read_text()
    assert "## Known issues" in md and "| planted |" in md and "known issue" in md


def test_cli_families(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--family", "lu"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'lu'" in err and "linalg" in err and "gemm" in err
    with pytest.raises(SystemExit) as exc:
        cli.main(["--family", "linalg", "--case", "hpl-n3"])
    assert exc.value.code == 2 and "unknown case(s): hpl-n3" in capsys.readouterr().err
    assert cli.main(["--family", "linalg", "--case", "pivot-n256", "--out", str(tmp_path)]) == 0
    assert "1 matrices, 2 routines: 0 failures" in capsys.readouterr().out
    assert (tmp_path / "linalg_report.md").exists()


@pytest.mark.slow
def test_campaign_without_test_extra_says_what_to_install():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import runpy, sys\n"
            "sys.modules['tqdm'] = None  # as if the test extra were not installed\n"
            "sys.argv = ['python -m validation.linalg', '--quick']\n"
            "runpy.run_module('validation.linalg', run_name='__main__', alter_sys=True)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    assert "tqdm is needed by python -m validation.linalg" in r.stderr

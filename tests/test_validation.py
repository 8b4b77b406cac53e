"""The validation suite: its references, and the quick tier end to end."""

import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from validation.metrics import Reference
from validation.reference import dd_matmul, exact_expansion, fraction_matmul, test_matrix

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("phi", [0.0, 1.0, 4.0, None])
def test_dd_matmul_within_radius_of_fractions(phi, rng):
    A, B = test_matrix(5, 40, phi, rng), test_matrix(40, 4, phi, rng)
    hi, lo, rad, absAB = dd_matmul(A, B)
    F = fraction_matmul(A, B)
    Fa = fraction_matmul(np.abs(A), np.abs(B))
    for i in range(5):
        for j in range(4):
            err = abs(Fraction(hi[i, j]) + Fraction(lo[i, j]) - F[i][j])
            assert err <= Fraction(rad[i, j])
            assert rad[i, j] < 2.0 ** -90 * absAB[i, j] + 2.0 ** -1000
            assert float(Fa[i][j]) == pytest.approx(absAB[i, j], rel=2.0 ** -52)


def test_dd_matmul_two_product_is_error_free():
    # (1 + 2**-30)(1 - 2**-30) = 1 - 2**-60: an FMA-contracted split would lose the tail
    a, b = 1 + 2.0 ** -30, 1 - 2.0 ** -30
    hi, lo, _, _ = dd_matmul(np.array([[a, a]]), np.array([[b], [b]]))
    assert (hi[0, 0], lo[0, 0]) == (2.0, -2.0 ** -59)


def test_dd_matmul_cancellation(rng):
    x = test_matrix(1, 30, 2.0, rng)
    A = np.hstack((x, x, [[2.0 ** -70]]))
    B = np.vstack((x.T, -x.T, [[1.0]]))
    hi, lo, rad, absAB = dd_matmul(A, B)
    err = abs(Fraction(hi[0, 0]) + Fraction(lo[0, 0]) - fraction_matmul(A, B)[0][0])
    assert err <= Fraction(rad[0, 0]) and rad[0, 0] < 2.0 ** -90 * absAB[0, 0]


def test_exact_expansion_equals_fractions(rng):
    A, B = test_matrix(3, 25, 4.0, rng), test_matrix(25, 3, 4.0, rng)
    F = fraction_matmul(A, B)
    Fa = fraction_matmul(np.abs(A), np.abs(B))
    S = exact_expansion(A, B)
    T = exact_expansion(A, B, absolute=True)
    for (i, j), parts in S.items():
        assert sum(map(Fraction, parts), Fraction(0)) == F[i][j]
        assert sum(map(Fraction, T[i, j]), Fraction(0)) == Fa[i][j]


@pytest.mark.parametrize("force_dd", [False, True])
def test_reference_decisions_are_exact(force_dd, rng):
    A, B = test_matrix(4, 30, 1.0, rng), test_matrix(30, 4, 1.0, rng)
    ref = Reference(A, B, force_dd=force_dd)
    F = fraction_matmul(A, B)
    C = A @ B
    err = np.array([[float(abs(Fraction(C[i, j]) - F[i][j])) for j in range(4)]
                    for i in range(4)])
    # a threshold exactly at the (rounded) error, just below, and just above
    for X in (err, np.nextafter(err, 0), np.nextafter(err, 1)):
        want = np.array([[abs(Fraction(C[i, j]) - F[i][j]) > Fraction(X[i, j])
                          for j in range(4)] for i in range(4)])
        assert np.array_equal(ref.exceeds(C, X), want)
    assert not ref.misses_target(np.array([[float(F[i][j]) for j in range(4)]
                                           for i in range(4)])).any()


def test_quick_tier(tmp_path):
    out = tmp_path / "v"
    proc = subprocess.run([sys.executable, "-m", "validation", "--quick", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("report.md", "report.rst", "results.json"):
        assert (out / name).stat().st_size > 0
    assert list(out.glob("*.png"))
    res = json.loads((out / "results.json").read_text())
    assert set(res) == {"meta", "cases", "failures"}
    assert res["meta"]["tier"] == "quick" and res["failures"] == []
    families = {c["family"] for c in res["cases"]}
    assert {"phi", "integer", "hilbert", "banded", "cancel-proj"} <= families
    for c in res["cases"]:
        assert {"name", "m", "n", "k", "reference", "native", "runs"} <= set(c)
        assert {"max_rel", "median_rel", "max_nrm", "median_nrm"} <= set(c["native"])
        seen = {(r["scheme"], r["mode"]) for r in c["runs"] if r["requested"] == "auto"}
        assert seen == {(s, m) for s in ("int8", "fp8", "fp64") for m in ("accurate", "fast")}
        for r in c["runs"]:
            assert {"num_moduli", "gemms", "max_rel", "max_nrm", "uncertified",
                    "fallback"} <= set(r)
            if r["mode"] == "accurate":
                assert r["bound"]["max_err_over_bound"] <= 1


def test_broken_promises_are_caught():
    from types import SimpleNamespace

    from validation.families import find
    from validation.suite import CaseRun

    cr = CaseRun(find("hilbert-12"))
    C = cr.A @ cr.B
    T = cr.ref.T
    C[3, 4] += 1e-6 * T[3, 4]  # far beyond the bound and the target
    info = SimpleNamespace(error_bound=2.0 ** -40 * T, certified=True, fallback="none")
    rec = {"scheme": "fp64", "mode": "accurate", "requested": 6}
    cr._measure(rec, C, info)
    assert {f["check"] for f in cr.failures} == {"bound", "target"}
    assert all(f["first"] == [3, 4] and f["entries"] == 1 for f in cr.failures)

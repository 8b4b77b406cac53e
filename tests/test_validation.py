"""The validation suite: its references, its checks (shown able to fail), and the quick
tier end to end, adversarial family included."""

import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import ozaki

from validation.families import adversarial_cases, find
from validation.metrics import RationalReference, Reference, round_fraction
from validation.reference import dd_matmul, exact_expansion, fraction_matmul, test_matrix
from validation.suite import ENGINE_CHECK_LIMIT, KNOWN_ISSUES, UNIT_ENGINES, CaseRun, run_case

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


@pytest.fixture(scope="module", params=["compensated", "emulated"])
def quick_tier(request, tmp_path_factory):
    """The quick tier, run once per way of computing the small products (as users get
    them, and by the emulation): ``(output folder, results)``."""
    out = tmp_path_factory.mktemp("validation") / "v"
    extra = ["--emulated"] if request.param == "emulated" else []
    proc = subprocess.run([sys.executable, "-m", "validation", "--quick", "--out", str(out)]
                          + extra, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, json.loads((out / "results.json").read_text())


@pytest.mark.slow
def test_quick_tier(quick_tier):
    out, res = quick_tier
    for name in ("report.md", "report.rst", "results.json"):
        assert (out / name).stat().st_size > 0
    assert list(out.glob("*.png"))
    assert set(res) == {"meta", "cases", "failures", "known_issues"}
    assert res["meta"]["tier"] == "quick" and res["failures"] == []
    families = {c["family"] for c in res["cases"]}
    assert {"phi", "integer", "hilbert", "banded", "cancel-proj", "adversarial"} <= families
    for c in res["cases"]:
        assert {"name", "m", "n", "k", "reference", "native", "runs"} <= set(c)
        assert {"max_rel", "median_rel", "max_nrm", "median_nrm"} <= set(c["native"])
        seen = {(r["scheme"], r["mode"]) for r in c["runs"] if r["requested"] == "auto"}
        assert seen == {(s, m) for s in ozaki.SCHEMES for m in ("accurate", "fast")}
        for r in c["runs"]:
            assert {"num_moduli", "gemms", "engine", "max_rel", "max_nrm", "uncertified",
                    "fallback", "exact_entries", "special"} <= set(r)
            # the default engine ran it, and auto in accurate mode met the scheme's unit
            assert r["engine"] == ozaki.resolve_options(r["scheme"], "auto", r["mode"],
                                                        "auto").engine.name
            small = c["m"] * c["n"] * c["k"] <= ENGINE_CHECK_LIMIT
            if r["requested"] == "auto" and r["mode"] == "accurate" and small:
                assert r.get("unit_engine") == UNIT_ENGINES.get(r["scheme"])
            assert r["fallback"] in ("none", "exact")
            assert r["bound"]["max_err_over_bound"] <= 1  # both modes give bounds now
    report = (out / "report.md").read_text()
    assert "## Adversarial inputs" in report and "native fallback" not in report
    for s in ozaki.SCHEMES:  # every scheme's tables, and the engine it ran on
        assert f"Scheme {s}: auto against native" in report
        assert f"{s} on ``{ozaki.resolve_options(s, 'auto', 'fast', 'auto').engine.name}``" \
            in report
        assert (out / f"error_vs_moduli_{s}.png").stat().st_size > 0


def test_no_known_issues_remain(quick_tier):
    _, res = quick_tier
    assert KNOWN_ISSUES == () and res["known_issues"] == []


def test_adversarial_family_passes(quick_tier):
    _, res = quick_tier
    cases = {c["name"]: c for c in res["cases"] if c["family"] == "adversarial"}
    assert set(cases) == {c.name for c in adversarial_cases()}
    for c in cases.values():
        assert c["failures"] == [] and c["reference"]["kind"] == "rational"
        for r in c["runs"]:  # every scheme, mode and count: the special-value semantics
            assert r["special"] == {"nan": 0, "inf_where_finite": 0, "overflow_wrong": 0}
            assert r["exact_entries"] >= c["reference"]["guard_entries"]
    assert cases["adv-signs-1.5e308"]["reference"]["overflow_entries"] > 0
    assert cases["adv-overflow-result"]["reference"]["overflow_entries"] == 5
    assert cases["adv-subnormal"]["reference"]["subnormal_entries"] > 0
    # numpy gets special values wrong on these inputs; ozaki must not
    assert cases["adv-overflow-cancel"]["native"]["special"]["inf_where_finite"] > 0
    fg = [r for r in cases["adv-fallback-guard"]["runs"]
          if r["requested"] == "auto" and r["mode"] == "accurate"]
    small = res["meta"]["small_products"]
    assert fg and all(r["path"] == small for r in fg)
    for r in fg:
        if small == "emulated":  # both kinds of exactly computed entries in one product
            assert 0 < r["fallback_entries"] < r["exact_entries"]
        else:  # Dot2 certifies the hidden product; the guard's entries are exact, and
            # those whose products may underflow (the 1e-300 of row 0) fall back
            assert 0 < r["exact_entries"] and r["fallback_entries"] <= r["exact_entries"]
            assert r["uncertified"] == r["fallback_entries"]
    fast = {r["scheme"]: r for r in cases["adv-fast-2049"]["runs"] if r["mode"] == "fast"
            and r["requested"] == "auto"}
    assert all(r["certified"] for r in fast.values())
    if small == "emulated":
        assert fast["int8"]["max_rel"] > 2.0 ** -53  # beyond u |AB|: the final rounding counts
    sub = [r for r in cases["adv-subnormal"]["runs"] if r["requested"] == "auto"]
    assert all(r["uncertified"] > 0 and r["fallback"] == "exact" for r in sub)


# -- the references on adversarial inputs -------------------------------------

@pytest.mark.parametrize("q,want", [
    (Fraction(2 ** 1024 - 2 ** 971), 1.7976931348623157e308),  # max double exactly
    (Fraction(2 ** 1024 - 2 ** 970 - 1), 1.7976931348623157e308),  # just below the tie
    (Fraction(2 ** 1024 - 2 ** 970), np.inf),  # the tie rounds to even: 2**1024
    (-Fraction(2 ** 1100), -np.inf),
    (Fraction(3, 10) * Fraction(5e-324), 0.0),
    (Fraction(7, 10) * Fraction(5e-324), 5e-324),
    (Fraction(1, 2) * Fraction(5e-324), 0.0),  # tie to even
    (Fraction(3, 2) * Fraction(5e-324), 1e-323),
])
def test_round_fraction_is_correct_rounding(q, want):
    assert round_fraction(q) == want


def test_rational_reference_agrees_with_the_expansions(rng):
    A, B = test_matrix(4, 30, 2.0, rng), test_matrix(30, 3, 2.0, rng)
    ex, ra = Reference(A, B), RationalReference(A, B)
    assert np.array_equal(ex.S, ra.S) and np.array_equal(ex.T, ra.T)
    C = ex.S.copy()
    C[0, 0] = (A @ B)[0, 0]
    C[1, 2] = np.nextafter(ex.S[1, 2], np.inf)  # one ulp off the correctly rounded value
    assert np.array_equal(ex.errors(C)[0], ra.errors(C)[0])
    for check in ("misses_target", "misses_normwise"):
        assert np.array_equal(getattr(ex, check)(C), getattr(ra, check)(C))
    X = ex.errors(C)[0]
    for Y in (X, np.nextafter(X, 0), np.nextafter(X, 1)):
        assert np.array_equal(ex.exceeds(C, Y), ra.exceeds(C, Y))
    mask = np.ones(C.shape, bool)
    want = [[0, 0], [1, 2]] if C[0, 0] != ex.S[0, 0] else [[1, 2]]
    assert np.argwhere(ex.not_rounded(C, mask)).tolist() == want
    assert np.argwhere(ra.not_rounded(C, mask)).tolist() == want


def test_rational_reference_handles_overflow_and_subnormals():
    A, B = np.array([[1.0, -2.0, 1e308], [5e-324, 0.0, 0.0]]), np.array([[0.3], [1e308], [3.5]])
    ref = RationalReference(A, B)
    assert ref.S[0, 0] == 1.5e308 and ref.T[0, 0] == np.inf and ref.guard[0, 0]
    assert ref.S[1, 0] == 0.0 and not ref.zero[1, 0]  # 0.3 * 2**-1074 rounds to zero
    C = np.array([[1.5e308], [0.0]])
    err = ref.errors(C)[0]
    assert err[0, 0] == 0.3 and err[1, 0] == 0.0  # |C - AB| = 0.3, 0.3 * 2**-1074 rounded
    assert not ref.special(C)["nan"].any() and not ref.not_rounded(C, np.ones((2, 1), bool)).any()
    # an error of 0.3 * 2**-1074 is above a zero bound, though it rounds to 0
    assert ref.exceeds(C, np.zeros((2, 1)))[1, 0]
    assert not ref.exceeds(C, np.full((2, 1), 5e-324))[1, 0]
    ovf = RationalReference(np.array([[1e308, 1e308]]), np.array([[1.0], [1.0]]))
    assert ovf.overflow[0, 0] and ovf.S[0, 0] == np.inf
    assert ovf.errors(np.array([[np.inf]]))[0][0, 0] == 0.0  # the right infinity
    assert ovf.errors(np.array([[-np.inf]]))[0][0, 0] == np.inf


def test_double_double_reference_checks_rounding_within_its_radius(rng):
    A, B = test_matrix(3, 40, 1.0, rng), test_matrix(40, 3, 1.0, rng)
    ref = Reference(A, B, force_dd=True)
    F = fraction_matmul(A, B)
    C = np.array([[float(F[i][j]) for j in range(3)] for i in range(3)])
    mask = np.ones(C.shape, bool)
    assert not ref.not_rounded(C, mask).any()
    C[2, 0] = np.nextafter(C[2, 0], -np.inf)
    assert np.argwhere(ref.not_rounded(C, mask)).tolist() == [[2, 0]]


# -- the checks catch planted violations ------------------------------------

def _fabricated(error_bound=None, certified=False):
    from types import SimpleNamespace
    return SimpleNamespace(error_bound=error_bound, certified=certified, fallback="none")


def _checks(cr):
    return {f["check"]: f for f in cr.failures}


def _loose_bound(ref):
    """Two ulps of the exact value: above the error of any result one ulp off."""
    return 2.0 ** -51 * np.abs(ref.S) + 5e-324


def test_broken_promises_are_caught():
    cr = CaseRun(find("hilbert-12"))
    C = cr.A @ cr.B
    T = cr.ref.T
    C[3, 4] += 1e-6 * T[3, 4]  # far beyond the bound and the target
    rec = {"scheme": "fp64", "mode": "accurate", "requested": 6}
    cr._measure(rec, C, _fabricated(2.0 ** -40 * T, certified=True))
    assert {f["check"] for f in cr.failures} == {"bound", "target"}
    assert all(f["first"] == [3, 4] and f["entries"] == 1 for f in cr.failures)


def test_special_value_violations_are_caught():
    cr = CaseRun(find("adv-overflow-result"))
    S = cr.ref.S  # columns: inf, -inf, inf, max, max / 0, 0, inf, inf, max
    C = S.copy()
    C[0, 1] = np.nan  # exact 0
    C[2, 0] = np.finfo(float).max  # exact value rounds to inf: the tie 2**1024 - 2**970
    C[1, 0] = np.inf  # the wrong infinity
    C[3, 0] = np.inf  # exact value rounds to the largest double
    cr._measure({"scheme": "int8", "mode": "accurate", "requested": 6}, C, _fabricated())
    got = _checks(cr)
    assert set(got) == {"nan", "overflow_wrong", "inf_where_finite", "guard-rounding"}
    assert got["nan"]["first"] == [0, 1]
    assert got["overflow_wrong"]["entries"] == 2 and got["overflow_wrong"]["first"] == [1, 0]
    assert got["inf_where_finite"]["first"] == [3, 0]
    assert got["guard-rounding"]["entries"] == 4  # all four are guarded entries


def test_an_incorrectly_rounded_fallback_entry_is_caught():
    cr = CaseRun(find("adv-hidden-small"))
    C = cr.ref.S.copy()
    C[0, 0] = np.nextafter(C[0, 0], 2.0)  # one ulp off: within u |C|, not correctly rounded
    mask = np.zeros(C.shape, bool)
    mask[0, 0] = True
    eb = _loose_bound(cr.ref)
    cr._measure({"scheme": "int8", "mode": "accurate", "requested": "auto"}, C,
                _fabricated(eb), mask)
    assert set(_checks(cr)) == {"fallback-rounding"}
    assert _checks(cr)["fallback-rounding"]["first"] == [0, 0]


def test_nan_bounds_fail():
    cr = CaseRun(find("adv-hidden-small"))
    eb = _loose_bound(cr.ref)
    eb[2, 1] = np.nan
    cr._measure({"scheme": "int8", "mode": "accurate", "requested": 4}, cr.ref.S.copy(),
                _fabricated(eb))
    assert set(_checks(cr)) == {"bound-nan"} and _checks(cr)["bound-nan"]["first"] == [2, 1]
    cr._measure({"scheme": "int8", "mode": "fast", "requested": 4}, cr.ref.S.copy(),
                _fabricated(eb))
    assert len(cr.failures) == 2 and cr.known == []


@pytest.mark.slow
def test_normwise_check_covers_the_final_rounding_exactly():
    cr = CaseRun(find("adv-fast-2049"))
    ref = cr.ref
    V = ref.exact_value(0, 0)
    norm2 = ref.exact_norm2("a", 0)  # ||a|| ||b|| = ||a||**2: a = b
    assert ref.exact_norm2("b", 0) == norm2
    target = Fraction(1, 2 ** 53) * (abs(V) + norm2)  # about one ulp of V
    got, want = [], []
    for steps in range(-3, 4):  # the doubles around V, decided exactly
        c = float(V)
        for _ in range(abs(steps)):
            c = np.nextafter(c, np.inf if steps > 0 else -np.inf)
        got.append(bool(ref.misses_normwise(np.array([[c]]))[0, 0]))
        want.append(abs(Fraction(c) - V) > target)
    assert got == want and True in want and False in want
    # ozaki's result meets the target, but not the former claim u ||a|| ||b||
    import ozaki
    C, info = ozaki.dgemm(cr.A, cr.B, scheme="int8", mode="fast", bounds=True)
    assert info.certified and not ref.misses_normwise(C)[0, 0]
    assert ref.exceeds(C, np.array([[float(Fraction(1, 2 ** 53) * norm2)]]))[0, 0]


def test_a_wrong_ozaki_result_fails_the_case(monkeypatch):
    import validation.suite as suite
    dgemm = suite.ozaki.dgemm

    def off_by_overflow(*args, **kwargs):
        out = dgemm(*args, **kwargs)
        C = out[0] if isinstance(out, tuple) else out
        C[0, 0] = np.inf  # exactly 1.5e308
        return out

    monkeypatch.setattr(suite.ozaki, "dgemm", off_by_overflow)
    res = run_case(find("adv-overflow-cancel"))
    checks = {f["check"] for f in res["failures"]}
    assert {"inf_where_finite", "guard-rounding"} <= checks
    assert all(f["first"] == [0, 0] for f in res["failures"])


def test_the_campaign_covers_every_scheme():
    from validation.report import SCHEMES as reported
    assert set(reported) == set(ozaki.SCHEMES) and len(reported) == len(ozaki.SCHEMES)
    # every low-precision scheme has a simulated unit engine to be compared with
    assert set(UNIT_ENGINES) == set(ozaki.SCHEMES) - {"fp64"}
    assert all(e in ozaki.available_engines() for e in UNIT_ENGINES.values())

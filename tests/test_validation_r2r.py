"""The DCT/DST families of the FFT campaign (``python -m validation.fft``): the direct
sums against identities and scipy's conventions, the long-double reference against the
direct sums, the families' coverage, a few cases run, the report."""

import json
import math

import mpmath
import numpy as np
import pytest
import scipy.fft as sfft

import fft
from fft.reduced import reduction
from validation.fft import campaign, r2r, reference
from validation.fft.cases import R2R, Case, build, find, full_cases, quick_cases
from validation.fft.runner import run, write

U = 2.0 ** -53
ONE_D = ("dct", "idct", "dst", "idst")


def _matrix(transform, t, norm, N):
    """The direct sums' matrix (columns: the transforms of the unit vectors)."""
    cols = [r2r.direct(transform, t, norm, np.eye(N)[j]) for j in range(N)]
    return mpmath.matrix([[cols[j][i] for j in range(N)] for i in range(N)])


def _small(v):
    with mpmath.workprec(r2r.PREC):
        return float(mpmath.mnorm(v, 1))


# --- the direct sums: identities and scipy's conventions --------------------------------

def test_trig_reduces_the_angle_exactly():
    with mpmath.workprec(r2r.PREC):
        for p, q in [(0, 1), (1, 2), (3, 4), (7, 12), (-5, 12), (12345678901, 4099),
                     (2 * 4099 * 7 + 3, 4099), (9, 6), (5, 5), (11, 9)]:
            for trig, f in (("cos", mpmath.cospi), ("sin", mpmath.sinpi)):
                want = f(mpmath.mpf(p % (2 * q)) / q)
                assert abs(r2r.trig_pi(trig, p, q) - want) < mpmath.mpf(2) ** -110, (trig, p, q)


@pytest.mark.parametrize("kind", ["dct", "dst"])
@pytest.mark.parametrize("t", r2r.TYPES)
def test_ortho_matrices_are_orthogonal_and_inverses_invert(kind, t):
    """scipy documents its ``"ortho"`` DCT/DST matrices as orthogonal and ``idct`` as the
    inverse under every norm: both hold for the direct sums, in mpmath, at an odd and an
    even length (which pins down the weights, the endpoints and the norms)."""
    for N in (5, 6):
        with mpmath.workprec(r2r.PREC):
            C = _matrix(kind, t, "ortho", N)
            assert _small(C * C.T - mpmath.eye(N)) < 1e-30
            assert _small(_matrix("i" + kind, t, "ortho", N) - C.T) < 1e-30
            for norm in r2r.NORMS:
                prod = _matrix("i" + kind, t, norm, N) * _matrix(kind, t, norm, N)
                assert _small(prod - mpmath.eye(N)) < 1e-30, (norm, N)


def test_dct2_dct3_transposes_and_dst_from_dct():
    N = 7
    with mpmath.workprec(r2r.PREC):
        C2, C3 = _matrix("dct", 2, None, N), _matrix("dct", 3, None, N)
        # DCT-II (2 cos) is the transpose of DCT-III (x[0] once, 2 cos), row 0 halved there
        w = [1 if k == 0 else 2 for k in range(N)]
        assert _small(mpmath.matrix([[C2[k, n] * w[k] - 2 * C3[n, k] for n in range(N)]
                                     for k in range(N)])) < 1e-30
    x = np.random.default_rng(5).standard_normal(N)
    flipped = x * (-1.0) ** np.arange(N)
    dst = r2r.direct("dst", 2, None, x)
    dct = r2r.direct("dct", 2, None, flipped)
    assert max(abs(a - b) for a, b in zip(dst, dct[::-1])) < 1e-30


@pytest.mark.parametrize("transform", ONE_D)
def test_direct_sums_are_scipys_convention(transform):
    """Within float64 rounding of scipy.fft in float64, for every type and norm
    (orthogonalize at its default), at odd and even lengths."""
    for N in (2, 5, 8):
        x = np.random.default_rng(N).standard_normal(N)
        for t in r2r.TYPES:
            for norm in (None,) + r2r.NORMS:
                got = np.array([float(v) for v in r2r.direct(transform, t, norm, x)])
                want = getattr(sfft, transform)(x, type=t, norm=norm)
                assert np.abs(got - want).max() <= 1e-14 * np.abs(want).max(), (t, norm, N)


def test_nd_direct_sums_are_the_1d_ones_along_each_axis():
    x = np.random.default_rng(3).standard_normal((3, 4, 5))
    got = np.array([float(v) for v in r2r.direct("idctn", 2, "ortho", x)]).reshape(x.shape)
    assert np.allclose(got, sfft.idctn(x, type=2, norm="ortho"), rtol=0, atol=1e-14)


# --- the long-double reference against the direct sums ---------------------------------

@pytest.mark.parametrize("transform, t, shape", r2r.SMALL_CHECKS[::3] + r2r.SMALL_CHECKS[-3:])
def test_long_double_reference_agrees_with_direct_sums(transform, t, shape):
    x = build(Case(transform, "normal", shape, type=t))
    for norm in r2r.NORMS:
        ref = reference.long_double(transform, x, shape, type=t, norm=norm)
        assert ref.dtype == np.longdouble
        got = reference.agreement(ref, r2r.direct(transform, t, norm, x))
        assert got["rel_l2"] < 1e-18 and got["rel_rms"] < 1e-18, (norm, got)
        # ... and the float64 transform is farther from both than 1e-18 (the check sees)
        f64 = reference.agreement(getattr(sfft, transform)(x, type=t, norm=norm).astype(
            np.longdouble), r2r.direct(transform, t, norm, x))
        assert f64["rel_l2"] > 100 * got["rel_l2"]


def test_reference_checks_cover_every_type_inverse_and_nd():
    kinds = {(tr, t) for tr, t, shape in r2r.SMALL_CHECKS if len(shape) == 1}
    assert kinds == {(tr, t) for tr in ONE_D for t in r2r.TYPES}
    lengths = {shape[0] % 2 for tr, t, shape in r2r.SMALL_CHECKS if len(shape) == 1}
    assert lengths == {0, 1}
    assert any(len(shape) == 3 and tr == "dctn" for tr, t, shape in r2r.SMALL_CHECKS)
    assert any(len(shape) == 3 and tr.endswith("stn") for tr, t, shape in r2r.SMALL_CHECKS)


# --- the families ------------------------------------------------------------------------

def _r2r(cases):
    return [c for c in cases if c.r2r]


def test_families_cover_every_type_length_reduction_and_norm():
    quick, full = _r2r(quick_cases()), _r2r(full_cases())
    assert {c.name for c in quick} <= {c.name for c in full}
    for kind in ("dct", "dst"):
        for t in r2r.TYPES:
            fwd = [c for c in quick if c.transform == kind and c.type == t]
            lengths = {c.shape[0] for c in fwd}
            assert any(n % 2 for n in lengths) and any(n % 2 == 0 for n in lengths)
            assert {7, 17, 1009, 2053} <= lengths  # primes, 2053 past fft.DENSE_LIMIT
            assert {reduction(t, n) for n in lengths} == (
                {"direct", "mirror"} if t == 1 else {"direct", "half", "mirror"} if t == 4
                else {"direct", "makhoul", "half"})
            assert {c.norm or "backward" for c in fwd} == set(r2r.NORMS)
            inv = [c for c in quick if c.transform == "i" + kind and c.type == t]
            assert {c.norm or "backward" for c in inv} == set(r2r.NORMS)
            assert any(c.shape == (2 ** 20,) for c in full if c.transform == kind and c.type == t)
    assert not any(c.size >= 2 ** 17 for c in quick)
    for tr in ("dctn", "dstn"):
        assert any(c.transform == tr and len(c.shape) == 3 for c in quick)
        assert any(c.transform == tr and len(c.shape) == 3 and min(c.shape) >= 60 for c in full)
    assert {c.transform for c in full} == set(R2R)


def test_r2r_cases_are_rebuilt_from_their_names():
    c = find("idst3-ortho-normal-1024")
    assert (c.transform, c.type, c.norm, c.shape) == ("idst", 3, "ortho", (1024,))
    assert c.options == {"type": 3, "norm": "ortho"}
    assert find("dct2-normal-1024").options == {"type": 2, "norm": None}
    x = build("dct2-normal-1024")
    assert x.dtype == np.float64 and x.shape == (1024,)
    assert np.array_equal(x, build(find("dct2-normal-1024")))
    imp = build("dct2-impulse-1024-at1")
    assert imp[1] == 1 and np.count_nonzero(imp) == 1
    assert build("dctn2-normal-32x32x32").shape == (32, 32, 32)
    with pytest.raises(KeyError):
        find("dct5-normal-1024")


def test_bounds_and_bluestein_of_r2r():
    # DCT-II at 1024: extension 4096, FFT of 512 points
    assert campaign.case_bound(find("dct2-normal-1024")) == 2 * U * math.sqrt(12)
    assert r2r.fft_lengths("dct", 2, (1024,)) == [512]
    assert r2r.fft_lengths("idct", 2, (1009,)) == [1009]  # a DCT-III line, Makhoul
    # mirrored (above the direct product's lengths): the extension's 8N, 2(N+1), 2(N-1)
    assert r2r.fft_lengths("dst", 4, (129,)) == [1032]
    assert r2r.fft_lengths("dst", 1, (49,)) == [100] and r2r.fft_lengths("dct", 1, (49,)) == [96]
    # direct: no FFT, the trivial length 1 (no prime factor: never Bluestein)
    assert r2r.fft_lengths("dst", 4, (127,)) == [1] and r2r.fft_lengths("dct", 1, (48,)) == [1]
    assert r2r.fft_lengths("dstn", 4, (16, 15, 129)) == [8, 1, 1032]  # half, direct, mirror
    # Bluestein: Makhoul's 2053-point FFT; the mirrored type IV's 8 * 2053
    assert campaign.case_bluestein(find("dct2-normal-2053"))
    assert campaign.case_bluestein(find("dst4-normal-2053"))
    assert not campaign.case_bluestein(find("dct1-normal-2053"))  # 4104 = 2^3 3^3 19
    assert campaign.case_bound(find("dct2-normal-2053")) == 4 * U * math.sqrt(math.log2(4 * 2053))
    assert campaign.case_bound(find("dctn2-normal-32x32x32")) == 2 * U * math.sqrt(21)


# --- cases run ---------------------------------------------------------------------------

#: every reduction, both kinds, forward and inverse (ratios measured: 0.17-0.52)
RUN = ["dct2-normal-1024", "dst3-normal-17", "idct4-ortho-normal-1024", "dct1-normal-1024",
       "dst3-normal-16"]


@pytest.fixture(scope="module")
def ran():
    return {n: campaign.run_case(find(n)) for n in RUN}


def test_r2r_cases_beat_scipy(ran):
    for name, rec in ran.items():
        assert rec["failures"] == [], (name, rec["failures"])
        assert rec["r2r"] and rec["reductions"] and rec["norm"] in r2r.NORMS
        o, s = rec["ours"], rec["scipy"]
        assert 0 < o["rel_l2"] <= 0.75 * s["rel_l2"], name  # the goal is <= 1, median 0.7
        assert o["max"] <= s["max"] and o["rel_l2"] <= rec["bound"] < 8 * U
        assert rec["reference"]["kind"] == "long double"
        assert 0 < rec["reference"]["spot"] < reference.AGREEMENT_LIMIT
        assert len(rec["reference"]["bins"]) == 4
    assert {h for rec in ran.values() for h in rec["reductions"]} == {"direct", "mirror",
                                                                      "makhoul", "half"}


def _perturbed(monkeypatch, name, rel):
    good = getattr(fft, name)
    monkeypatch.setattr(fft, name, lambda *a, **k: good(*a, **k) * (1 + rel))


def test_a_perturbed_dct_fails_against_scipy(monkeypatch):
    # 2 u relative on every output: above scipy's error (about 1 u here), within the bound
    _perturbed(monkeypatch, "dct", 2 * U)
    rec = campaign.run_case(find("dct2-normal-16"))
    assert {f["check"] for f in rec["failures"]} == {"vs-scipy-l2", "vs-scipy-max"}
    _perturbed(monkeypatch, "idst", 1e-12)
    rec = campaign.run_case(find("idst3-ortho-normal-1024"))
    assert {f["check"] for f in rec["failures"]} == {"vs-scipy-l2", "vs-scipy-max", "bound"}


def test_a_wrong_r2r_reference_is_caught(monkeypatch):
    good = reference.long_double
    monkeypatch.setattr(reference, "long_double",
                        lambda *a, **k: good(*a, **k) * (1 + np.longdouble(1e-16)))
    rec = campaign.run_case(find("dst2-normal-17"))
    assert "reference" in {f["check"] for f in rec["failures"]}


def _rec(transform, t, ours, scipy_, mx=(1.0, 2.0)):
    return {"r2r": True, "transform": transform, "type": t, "seconds": {"ours": 0.5},
            "ours": {"rel_l2": ours, "max": mx[0]}, "scipy": {"rel_l2": scipy_, "max": mx[1]}}


def test_r2r_summary_and_median_goal():
    recs = [_rec("dct", 2, 1.0, 2.0), _rec("idct", 2, 3.0, 4.0), _rec("dst", 4, 3.0, 2.0),
            _rec("dst", 4, 0.0, 0.0, (0.0, 0.0)), {"transform": "fft"}]
    s = campaign.r2r_summary(recs)
    by = {g["label"]: g for g in s["groups"]}
    assert set(by) == {"DCT-2", "DST-4"}
    assert by["DCT-2"]["cases"] == 2 and by["DCT-2"]["l2_median"] == pytest.approx(0.625)
    assert by["DST-4"]["l2_max"] == 1.5 and by["DST-4"]["above_l2"] == 1
    assert s["all"]["cases"] == 4 and s["all"]["l2_median"] == 0.75 and not s["ok"]
    assert s["all"]["seconds"] == 2.0
    fails = campaign.tier_failures(recs, "quick")
    assert [(f["check"], f["measured"]) for f in fails] == [("r2r-median", 0.75)]
    assert campaign.tier_failures(recs, "selected") == []
    assert campaign.tier_failures(recs[:2], "full") == []  # median 0.625
    assert campaign.r2r_summary([{"transform": "fft"}]) is None


@pytest.mark.slow
def test_report_lists_the_r2r_cases_per_type(tmp_path):
    names = ["fft-normal-64", "dct2-normal-1024", "dst3-normal-1009", "idct4-ortho-normal-1024",
             "dctn2-normal-32x32x32"]
    res = run([find(n) for n in names], "selected", progress=False)
    write(res, tmp_path / "v", docs=str(tmp_path / "docs"))
    out = json.loads((tmp_path / "v" / "fft_results.json").read_text())
    assert out["failures"] == [] and out["r2r"]["all"]["cases"] == 4
    assert [g["label"] for g in out["r2r"]["groups"]] == ["DCT-2", "DCT-4", "DST-3"]
    assert all(r["ok"] for r in out["reference_checks"])
    assert len(out["reference_checks"]) == campaign.reference_check_count()
    md = (tmp_path / "v" / "fft_report.md").read_text()
    assert "DCT/DST against scipy.fft, per type" in md and "| DCT-2 | 2 |" in md
    assert "| dst3-normal-1009 | 1009* |" not in md  # 1009: one dense stage, no Bluestein
    assert "| dst3-normal-1009 | 1009 | makhoul |" in md
    assert "| dctn2-normal-32x32x32 | 32768 | half |" in md
    assert "is **met**: 4 of 4 cases at most scipy's" in md
    assert "| dct2 (every norm) | 16 |" in md
    assert (tmp_path / "v" / "fft_r2r_ratio_vs_n.png").stat().st_size > 0
    rst = (tmp_path / "docs" / "_generated" / "validation_fft_report.rst").read_text()
    assert "_generated/validation_fft_r2r_ratio_vs_n.png" in rst

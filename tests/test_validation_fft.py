"""The FFT campaign of the validation suite: its reference (checked against mpmath),
its report, and its checks, shown to fail on a wrong transform."""

import json
import math

import numpy as np
import pytest

import fft
from validation.fft import campaign, reference
from validation.fft.runner import main, run, write
from validation.fft.cases import build, find, full_cases, quick_cases

U = 2.0 ** -53
TINY = ["fft-normal-64", "fft-impulse-1024-at1", "fft-wide-1024", "rfft-normal-1024",
        "hfft-normal-1024", "fftn-normal-16x16x16", "roundtrip-normal-1024"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny campaign, run once: ``(output folder, docs folder, results)``."""
    out = tmp_path_factory.mktemp("fft-validation")
    res = run([find(n) for n in TINY], "selected", progress=False)
    write(res, out / "v", docs=str(out / "docs"))
    return out / "v", out / "docs", json.loads((out / "v" / "fft_results.json").read_text())


@pytest.mark.slow
def test_tiny_campaign_report_structure(tiny):
    out, docs, res = tiny
    assert set(res) == {"meta", "reference_checks", "cases", "failures", "known_issues", "r2r"}
    assert res["r2r"] is None  # no DCT/DST case here
    assert res["meta"]["long_double_bits"] >= 64 and res["failures"] == []
    assert [c["name"] for c in res["cases"]] == TINY
    for c in res["cases"]:
        assert {"transform", "family", "shape", "size", "bluestein", "bound", "ours",
                "scipy", "goals", "reference", "failures"} <= set(c)
        assert c["goals"] == {"vs_scipy": True, "bound": True}
        assert c["ours"]["rel_l2"] <= c["scipy"]["rel_l2"] and c["ours"]["max"] <= c["scipy"]["max"]
        assert 0 < c["scipy"]["rel_l2"] < 10 * U or c["name"] == "fft-impulse-1024-at0"
    spots = {c["name"]: c["reference"] for c in res["cases"]}
    assert spots["roundtrip-normal-1024"]["kind"] == "exact"
    assert 0 < spots["fft-normal-64"]["spot"] < reference.AGREEMENT_LIMIT  # well within
    assert len(res["reference_checks"]) == campaign.reference_check_count()
    assert all(r["ok"] and r["rel_l2"] < 1e-18 for r in res["reference_checks"])
    md = (out / "fft_report.md").read_text()
    assert "| fft-normal-64 | 64 |" in md and "## FFT failures\n\nNone." in md
    assert (out / "fft_error_vs_n.png").stat().st_size > 0
    rst = (docs / "_generated" / "validation_fft_report.rst").read_text()
    assert "python -m validation.fft" in rst
    assert ".. image:: _generated/validation_fft_error_vs_n.png" in rst
    assert (docs / "_generated" / "validation_fft_error_vs_n.png").exists()


def _perturbed(monkeypatch, name="fft", rel=1e-12):
    good = getattr(fft, name)

    def wrong(*args, **kwargs):
        return good(*args, **kwargs) * (1 + rel)

    monkeypatch.setattr(fft, name, wrong)


@pytest.mark.slow
def test_a_wrong_transform_fails(monkeypatch, tmp_path):
    _perturbed(monkeypatch)
    rec = campaign.run_case(find("fft-normal-64"))
    checks = {f["check"] for f in rec["failures"]}
    assert checks == {"bound", "vs-scipy-l2", "vs-scipy-max"}
    assert rec["ours"]["rel_l2"] == pytest.approx(1e-12, rel=1e-3)
    assert rec["goals"] == {"vs_scipy": False, "bound": False}
    # the round trip goes through fft.fft too; the exit status says so
    assert campaign.run_case(find("roundtrip-normal-1024"))["failures"]
    assert main(["--case", "fft-normal-64", "--out", str(tmp_path)]) == 1
    assert "**NO**" in (tmp_path / "fft_report.md").read_text()


def test_a_perturbation_within_the_bound_is_caught_against_scipy(monkeypatch):
    # one ulp of 1 (2u) relative on every output: above scipy's error (1.6u), within the
    # bound (4.9u at N = 64)
    _perturbed(monkeypatch, rel=2 * U)
    rec = campaign.run_case(find("fft-normal-64"))
    assert {f["check"] for f in rec["failures"]} == {"vs-scipy-l2", "vs-scipy-max"}
    assert rec["scipy"]["rel_l2"] < rec["ours"]["rel_l2"] < rec["bound"]


def test_shape_and_special_values_are_checked(monkeypatch):
    monkeypatch.setattr(fft, "rfft", lambda x, **kw: fft.fft(x))  # full spectrum
    assert "signature" in {f["check"] for f in campaign.run_case(find("rfft-normal-1024"))
                           ["failures"]}
    good = fft.hfft

    def with_nan(*args, **kwargs):
        y = good(*args, **kwargs)
        y[3] = np.nan
        return y

    monkeypatch.setattr(fft, "hfft", with_nan)
    fails = {f["check"]: f for f in campaign.run_case(find("hfft-normal-1024"))["failures"]}
    assert fails["nonfinite"]["measured"] == 1 and "bound" in fails


def test_a_wrong_reference_is_caught(monkeypatch):
    good = reference.long_double
    monkeypatch.setattr(reference, "long_double",
                        lambda *a, **k: good(*a, **k) * (1 + np.longdouble(1e-16)))
    rec = campaign.run_case(find("fft-normal-61"))
    assert "reference" in {f["check"] for f in rec["failures"]}
    checks = campaign.reference_checks()
    assert not any(r["ok"] for r in checks)
    assert len(campaign.reference_failures(checks)) == campaign.reference_check_count()


def test_known_issues_do_not_fail(monkeypatch):
    _perturbed(monkeypatch)
    monkeypatch.setattr(campaign, "KNOWN_ISSUES",
                        ({"case": "fft-normal-64", "check": "bound", "issue": "planted"},))
    rec = campaign.run_case(find("fft-normal-64"))
    assert [f["check"] for f in rec["known_issues"]] == ["bound"]
    assert rec["known_issues"][0]["issue"] == "planted"
    assert {f["check"] for f in rec["failures"]} == {"vs-scipy-l2", "vs-scipy-max"}


def test_direct_dft_is_scipys_convention():
    x = build(find("fft-normal-64"))
    got = np.array([complex(v) for v in reference.direct_dft("fft", x, (64,))])
    assert np.abs(got - np.fft.fft(x)).max() < 1e-13
    h = np.array([1.0 + 5j, 2.0 - 1j, 0.5 + 0.25j, 3.0 + 7j])  # imag at 0 and n/2 ignored
    for t in ("irfft", "hfft"):
        got = [float(v) for v in reference.direct_dft(t, h, (6,))]
        assert np.allclose(got, getattr(np.fft, t)(h, 6), rtol=0, atol=1e-14)


def test_bounds_and_cases():
    assert campaign.bound((1024,)) == 2 * U * math.sqrt(10)
    assert campaign.bound((2053,)) == 4 * U * math.sqrt(math.log2(2053))
    assert campaign.bound((64, 64, 64)) == 2 * U * math.sqrt(18)
    assert campaign.bluestein((3, 4099)) and not campaign.bluestein((1009, 2 ** 20))
    names = [c.name for c in full_cases()]
    assert len(set(names)) == len(names) and {c.name for c in quick_cases()} <= set(names)
    assert {"fft-normal-1048576", "fft-normal-65537", "fftn-normal-128x128x128"} <= set(names)
    assert np.array_equal(build("fft-wide-1024"), build("fft-wide-1024"))
    mag = np.abs(build("fft-wide-1024"))
    assert mag.max() / mag.min() > 2.0 ** 40
    imp = build("fft-impulse-1024-at511")
    assert imp[511] == 1 and np.count_nonzero(imp) == 1
    assert build("irfft-normal-1009").shape == (505,) and build("rfft-normal-1009").dtype == float
    with pytest.raises(KeyError, match="no FFT case"):
        find("fft-normal-3")

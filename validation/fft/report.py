"""The FFT campaign's report (blocks rendered by :mod:`validation.report`) and figure."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..report import fu
from . import reference as refmod

U = 2.0 ** -53
FLOOR = 0.05  # exact results (error 0) are drawn here, in units of u


def _yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def _summary(res):
    meta, cases = res["meta"], res["cases"]
    fails, known = res["failures"], res.get("known_issues", [])
    verdict = ("**No failures**: on every case the ``fft`` package's relative L2 error and "
               "max error are at most scipy.fft's (float64, same input), its relative L2 "
               "error is within ``2 u sqrt(log2 N)`` (``4 u sqrt(log2 N)`` for Bluestein "
               "lengths), and the long-double reference agrees with the direct mpmath DFT "
               "wherever it was checked."
               if not fails else f"**{len(fails)} failures** (listed below).")
    if known:
        verdict += f" {len(known)} known, reported issues (listed below; not failures)."
    worse = sum(not c["goals"]["vs_scipy"] for c in cases)
    ratio = [c["ours"]["rel_l2"] / c["scipy"]["rel_l2"] for c in cases if c["scipy"]["rel_l2"]]
    return [("p", f"Tier ``{meta['tier']}``: {len(cases)} transforms checked in "
                  f"{meta['seconds']:.0f} s (scipy {meta['scipy']}, numpy {meta['numpy']}, "
                  f"long double of {meta['long_double_bits']} bits, mpmath "
                  f"{meta['mpmath']}). " + verdict),
            ("p", f"Ours against scipy.fft: relative L2 error {min(ratio, default=0):.2f} to "
                  f"{max(ratio, default=0):.2f} times scipy's (median "
                  f"{float(np.median(ratio)) if ratio else 0:.2f}); {worse} cases above "
                  "scipy's in either metric.")]


def _reference(res):
    checks = res["reference_checks"]
    spots = [c["reference"]["spot"] for c in res["cases"] if c["reference"]["spot"] is not None]
    rows = [[r["transform"], "x".join(map(str, r["shape"])), str(r["outputs"]),
             f"{r['rel_l2']:.2g}", f"{r['rel_rms']:.2g}", _yes(r["ok"])] for r in checks]
    return [("h", "FFT: the reference, checked"),
            ("p", "The reference is scipy.fft on the input widened to long double "
                  f"({res['meta']['long_double_bits']}-bit mantissa); the round trip's is the "
                  "input itself. It is checked against the DFT summed directly in mpmath "
                  f"({refmod.PREC} bits, angles reduced exactly): every output of the small "
                  "transforms below (normal input), and a few bins (0, 1, a third, the last) "
                  f"of every 1-D case up to N = {refmod.SPOT_LIMIT}: {len(spots)} cases, "
                  "largest difference " + (f"{max(spots):.2g}" if spots else "-") + " of the "
                  "output's root mean square (the limit: "
                  f"{refmod.SPOT_FRACTION:g} times the case's bound). "
                  "``rel L2``: ``||ref - mpmath|| / ||mpmath||``; ``max/rms``: the largest "
                  "difference over the output's root mean square; both must stay below "
                  f"{refmod.AGREEMENT_LIMIT:g} (u is 1.1e-16)."),
            ("table", "Long double against mpmath, every output",
             ["transform", "shape", "outputs", "rel L2", "max/rms", "ok"], rows)]


def _table(res):
    head = ["case", "N", "rel L2 ours", "rel L2 scipy", "max ours", "max scipy", "bound",
            "<= scipy", "<= bound"]
    rows = [[c["name"], str(c["size"]) + ("*" if c["bluestein"] else ""),
             fu(c["ours"]["rel_l2"]), fu(c["scipy"]["rel_l2"]), fu(c["ours"]["max"]),
             fu(c["scipy"]["max"]), fu(c["bound"]), _yes(c["goals"]["vs_scipy"]),
             _yes(c["goals"]["bound"])] for c in res["cases"]]
    return [("h", "FFT errors against the reference"),
            ("p", "In units of u = 2^-53: ``rel L2`` = ``||y - ref||_2 / ||ref||_2``, ``max`` = "
                  "``max |y - ref| / max |ref|``, for the ``fft`` package (ours) and scipy.fft "
                  "(float64) on the same input. ``bound`` is ``2 u sqrt(log2 N)``, N the number "
                  "of points; ``*`` marks Bluestein lengths (a prime factor above 2048), "
                  "whose bound is ``4 u sqrt(log2 N)``. ``<= scipy``: both of ours at most "
                  "scipy's; ``<= bound``: ours' rel L2 within the bound. Case names are "
                  "``transform-input-shape``; ``roundtrip`` is ``ifft(fft(x))`` against ``x``."),
            ("table", "FFT errors (units of u)", head, rows)]


def _failures(res):
    out = []
    known = res.get("known_issues", [])
    if known:
        out += [("h", "FFT known issues"),
                ("table", "Known issues", ["case", "check", "issue"],
                 [[f["case"], f["check"], f["issue"]] for f in known])]
    fails = res["failures"]
    out.append(("h", "FFT failures"))
    if not fails:
        return out + [("p", "None.")]
    rows = [[f["case"], f["check"], f"{f['measured']:.3g}", f"{f['limit']:.3g}", f["note"]]
            for f in fails]
    return out + [("p", "Reproduce with ``x = validation.fft.cases.build(case)``."),
                  ("table", "Failures", ["case", "check", "measured", "limit", "note"], rows)]


def blocks(res, images):
    out = _summary(res) + _reference(res) + _table(res) + _failures(res)
    out += [("h", "FFT figures")] + [("image", name, alt) for name, alt in images]
    return [b for b in out if b[0] != "table" or b[3]]


def plot(res, out: Path) -> list[tuple[str, str]]:
    """Relative L2 error against N, ours and scipy's, with the bounds."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = res["cases"]
    if not cases:
        return []
    fig, ax = plt.subplots(figsize=(9, 4.6))
    for key, color, mark, label in (("scipy", "tab:orange", "s", "scipy.fft (float64)"),
                                    ("ours", "tab:blue", "o", "fft (ozaki GEMMs)")):
        for blue, face in ((False, color), (True, "none")):
            cs = [c for c in cases if c["bluestein"] == blue]
            ax.plot([c["size"] for c in cs], [max(c[key]["rel_l2"] / U, FLOOR) for c in cs],
                    mark, ms=4 if key == "ours" else 5, mfc=face, color=color, alpha=0.85,
                    label=label + (" (Bluestein)" if blue else ""))
    top = max(c["size"] for c in cases)
    ns = np.logspace(1, math.log2(max(top, 4)), 200, base=2)
    ax.plot(ns, 2 * np.sqrt(np.log2(ns)), "k-", lw=1, label="2u sqrt(log2 N)")
    ax.plot(ns, 4 * np.sqrt(np.log2(ns)), "k--", lw=0.8, label="4u sqrt(log2 N) (Bluestein)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (points transformed)")
    ax.set_ylabel("||y - ref||_2 / ||ref||_2  [u]")
    ax.set_title(f"FFT relative L2 error, {res['meta']['tier']} tier "
                 f"(exact results drawn at {FLOOR:g} u)", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    name = "fft_error_vs_n.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return [(name, "FFT relative L2 error against N, ours and scipy.fft, with the bound")]

"""The FFT campaign's report (blocks rendered by :mod:`validation.report`) and figure."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..report import fu
from . import r2r
from . import reference as refmod

U = 2.0 ** -53
FLOOR = 0.05  # exact results (error 0) are drawn here, in units of u


def _yes(ok: bool) -> str:
    return "yes" if ok else "**NO**"


def _fft_cases(res):
    return [c for c in res["cases"] if not c.get("r2r")]


def _r2r_cases(res):
    return [c for c in res["cases"] if c.get("r2r")]


def _ratio(c, metric="rel_l2"):
    """Ours over scipy's (``None`` where both are 0)."""
    p, q = c["ours"][metric], c["scipy"][metric]
    return p / q if q else (None if p == 0 else math.inf)


def _fx(v) -> str:
    return "-" if v is None else "inf" if not math.isfinite(v) else f"{v:.2f}"


def _summary(res):
    meta, cases = res["meta"], res["cases"]
    fails, known = res["failures"], res.get("known_issues", [])
    r2r_goal = (f"the DCT/DST's median ratio to scipy's error is at most "
                f"{res['r2r']['goal_median']:g}, " if res.get("r2r") else "")
    verdict = ("**No failures**: on every case the ``fft`` package's relative L2 error and "
               "max error are at most scipy.fft's (float64, same input), its relative L2 "
               "error is within ``2 u sqrt(log2 N)`` (``4 u sqrt(log2 N)`` for Bluestein "
               "lengths; for a DCT/DST, N is the length of its symmetric extension), "
               + r2r_goal + "and the long-double reference agrees with the direct mpmath "
               "sums wherever it was checked."
               if not fails else f"**{len(fails)} failures** (listed below).")
    if known:
        verdict += f" {len(known)} known, reported issues (listed below; not failures)."
    ffts = _fft_cases(res)
    worse = sum(not c["goals"]["vs_scipy"] for c in ffts)
    ratio = [r for r in map(_ratio, ffts) if r is not None]
    out = [("p", f"Tier ``{meta['tier']}``: {len(cases)} transforms checked in "
                 f"{meta['seconds']:.0f} s (scipy {meta['scipy']}, numpy {meta['numpy']}, "
                 f"long double of {meta['long_double_bits']} bits, mpmath "
                 f"{meta['mpmath']}). " + verdict)]
    if ffts:
        out.append(("p", f"FFTs ({len(ffts)} cases) against scipy.fft: relative L2 error "
                         f"{min(ratio, default=0):.2f} to {max(ratio, default=0):.2f} times "
                         f"scipy's (median {float(np.median(ratio)) if ratio else 0:.2f}); "
                         f"{worse} cases above scipy's in either metric."))
    return out + _r2r_summary(res)


def _r2r_summary(res):
    s = res.get("r2r")
    if not s:
        return []
    a, goal = s["all"], s["goal_median"]
    checks = [r for r in res["reference_checks"] if "norms" in r]
    verdict = ("**met**" if s["ok"] else "**NOT met**")
    return [("p", f"DCT/DST ({a['cases']} cases, {a['seconds']:.1f} s including their "
                  "references and spot checks): the goal, relative L2 error at most "
                  "scipy.fft's on every validation case and at most "
                  f"{goal:g} times it in the median, is {verdict}: "
                  f"{a['cases'] - a['above_l2']} of {a['cases']} cases at most scipy's, "
                  f"ratio median {_fx(a['l2_median'])}, largest {_fx(a['l2_max'])}. "
                  f"Max error: {a['cases'] - a['above_max']} of {a['cases']} at most "
                  f"scipy's (median ratio {_fx(a['max_median'])}, largest "
                  f"{_fx(a['max_max'])}). The reference was checked on {len(checks)} small "
                  "transforms under every norm (below).")]


def _reference(res):
    checks = res["reference_checks"]
    spots = [c["reference"]["spot"] for c in res["cases"] if c["reference"]["spot"] is not None]
    rows = [[r["transform"] + (" (every norm)" if "norms" in r else ""),
             "x".join(map(str, r["shape"])), str(r["outputs"]),
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
                  "The DCT/DST's reference is scipy.fft's ``dct``, ``dst`` and the rest on "
                  "long double input, checked in the same way against scipy's defining sums "
                  f"in mpmath ({r2r.PREC} bits, the angles reduced exactly): every type "
                  "(``dct4``: the ``dct`` of type 4; ``idst3``: the ``idst`` of type 3), "
                  "forward and inverse, at lengths 16 and 17 and three small 3-D shapes, "
                  "under every norm (the worst one is shown). "
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
             _yes(c["goals"]["bound"])] for c in _fft_cases(res)]
    return [("h", "FFT errors against the reference"),
            ("p", "In units of u = 2^-53: ``rel L2`` = ``||y - ref||_2 / ||ref||_2``, ``max`` = "
                  "``max |y - ref| / max |ref|``, for the ``fft`` package (ours) and scipy.fft "
                  "(float64) on the same input. ``bound`` is ``2 u sqrt(log2 N)``, N the number "
                  "of points; ``*`` marks Bluestein lengths (a prime factor above 2048), "
                  "whose bound is ``4 u sqrt(log2 N)``. ``<= scipy``: both of ours at most "
                  "scipy's; ``<= bound``: ours' rel L2 within the bound. Case names are "
                  "``transform-input-shape``; ``roundtrip`` is ``ifft(fft(x))`` against ``x``."),
            ("table", "FFT errors (units of u)", head, rows)] + _r2r_tables(res)


def _r2r_tables(res):
    s = res.get("r2r")
    if not s:
        return []
    head = ["type", "cases", "rel L2 ratio median", "rel L2 ratio max", "above scipy (L2)",
            "max ratio median", "max ratio max", "above scipy (max)", "seconds"]
    rows = [[g["label"], str(g["cases"]), _fx(g["l2_median"]), _fx(g["l2_max"]),
             str(g["above_l2"]), _fx(g["max_median"]), _fx(g["max_max"]), str(g["above_max"]),
             f"{g['seconds']:.1f}"] for g in s["groups"] + [{**s["all"], "label": "all"}]]
    head2 = ["case", "N", "reduction", "rel L2 ours", "rel L2 scipy", "ratio", "max ours",
             "max scipy", "bound", "<= scipy", "<= bound"]
    rows2 = [[c["name"], str(c["size"]) + ("*" if c["bluestein"] else ""),
              "/".join(dict.fromkeys(c["reductions"])), fu(c["ours"]["rel_l2"]),
              fu(c["scipy"]["rel_l2"]), _fx(_ratio(c)), fu(c["ours"]["max"]),
              fu(c["scipy"]["max"]), fu(c["bound"]), _yes(c["goals"]["vs_scipy"]),
              _yes(c["goals"]["bound"])] for c in _r2r_cases(res)]
    return [("h", "DCT/DST errors against the reference"),
            ("p", "The real-to-real transforms, per kind and type as called (``DCT-2``: "
                  "``dct``, ``idct``, ``dctn``, ``idctn`` of type 2): ours' relative L2 error "
                  "over scipy.fft's on the same input (``ratio``), its median and largest, "
                  "the cases above scipy's, and the same for the max error (cases where "
                  "both are exact left out of the ratios). The issue's goal: every L2 ratio "
                  f"at most 1, the median at most {s['goal_median']:g}. ``seconds``: the "
                  "cases' time, references and spot checks included."),
            ("table", "DCT/DST against scipy.fft, per type", head, rows),
            ("p", "Every DCT/DST case, errors in units of u as for the FFTs. ``reduction``: "
                  "how ``fft.reduced.reduction`` computes the lines (``direct``: one product "
                  "with the transform's matrix in double-double, no FFT, every output a "
                  "nearest double of the exact transform; ``mirror``: the rfft of the "
                  "symmetric extension; ``makhoul``: an N-point real FFT; ``half``: an "
                  "N/2-point complex FFT). ``bound``: ``2 u sqrt(log2 M)``, M the product of "
                  "the extensions' lengths (``2(N-1)`` for DCT-I, ``2(N+1)`` for DST-I, "
                  "``4N`` for types II and III, ``8N`` for type IV), doubled where an FFT "
                  "taken has a prime factor above 2048 (``*``). Names are "
                  "``transform+type[-norm]-input-shape``; ``idct`` and ``idst`` are the "
                  "inverses (``idct`` of type 2 computes a DCT-III)."),
            ("table", "DCT/DST errors (units of u)", head2, rows2)]


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

    images = _plot_r2r(res, out, plt)
    cases = _fft_cases(res)
    if not cases:
        return images
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
    return [(name, "FFT relative L2 error against N, ours and scipy.fft, with the bound")] + images


def _plot_r2r(res, out: Path, plt) -> list[tuple[str, str]]:
    """Ours' relative L2 error over scipy's against N, per DCT/DST type."""
    cases = [c for c in _r2r_cases(res) if _ratio(c) is not None]
    if not cases:
        return []
    fig, ax = plt.subplots(figsize=(9, 4.6))
    colors = {1: "tab:blue", 2: "tab:orange", 3: "tab:green", 4: "tab:red"}
    for k, mark in (("dct", "o"), ("dst", "^")):
        for t in r2r.TYPES:
            cs = [c for c in cases if r2r.kind(c["transform"]) == k and c["type"] == t]
            if cs:
                ax.plot([c["size"] for c in cs], [min(_ratio(c), 10.0) for c in cs], mark,
                        ms=5, color=colors[t], mfc=colors[t] if k == "dct" else "none",
                        alpha=0.85, label=f"{k.upper()}-{t}")
    goal = res["r2r"]["goal_median"]
    ax.axhline(1.0, color="k", lw=1, label="scipy.fft's error")
    ax.axhline(goal, color="k", lw=0.8, ls="--", label=f"{goal:g} (the median's goal)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (points transformed)")
    ax.set_ylabel("rel L2 error, ours / scipy.fft's")
    ax.set_title(f"DCT/DST: ours' relative L2 error over scipy.fft's, {res['meta']['tier']} "
                 "tier (clipped at 10)", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=3, loc="upper right")
    fig.tight_layout()
    name = "fft_r2r_ratio_vs_n.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return [(name, "DCT/DST relative L2 error over scipy.fft's against N, per type")]

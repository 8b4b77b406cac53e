"""The linalg campaign's report (blocks rendered by :mod:`validation.report`) and figure."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import report as render
from . import campaign
from .reference import EPS, REF_LIMIT

SOLVERS = ("ozaki", "scipy", "refined")
FLOOR = {"hpl": 1e-8, "componentwise": 1e-3, "forward": 1e-3}  # where exact zeros are drawn


def _g(v) -> str:
    """A measure compactly (``-`` where the solver did not run or raised)."""
    if v is None:
        return "-"
    v = float(v)
    if not math.isfinite(v):
        return "inf"
    return "0" if v == 0 else f"{v:.2g}" if 1e-3 <= abs(v) < 1e4 else f"{v:.1e}"


def _u(v) -> str:
    """A relative error in units of ``u = 2**-53``."""
    return "-" if v is None else _g(float(v) / EPS)


def has_refined(res) -> bool:
    return any("refined" in r for c in res["cases"] for r in c["routines"])


def _cell(r: dict, key: str, unit=_g) -> str:
    return " / ".join(unit(r[s].get(key)) for s in SOLVERS if s in r)


def _verdict(res) -> str:
    fails, known = res["failures"], res.get("known_issues", [])
    if fails:
        return f"**{len(fails)} failures** (listed below)."
    text = (f"**No failures**: every ozaki solution's HPL scaled residual is below "
            f"{campaign.HPL_THRESHOLD:g}, at most {campaign.RATIO:g} times scipy.linalg's "
            "(scipy's taken at least 1/(2n)), its componentwise backward error at most "
            f"{campaign.RATIO:g} times scipy's (at least u); every matrix is what it claims "
            "and every reference converged.")
    if has_refined(res):
        text += (" The refined solve's normwise backward error is within its tolerance "
                 f"({campaign.REFINED_TOL / EPS:g} u, plus u) and its componentwise one at "
                 f"most {campaign.RATIO:g} times scipy's (at least its tolerance).")
    if known:
        text += f" {len(known)} known, reported issues (listed below; not failures)."
    return text


def _summary(res):
    meta, cases = res["meta"], res["cases"]
    runs = sum(len(c["routines"]) for c in cases)
    refined = ("``ozaki.linalg.solve_refined`` ran beside ``solve`` (a third value in each "
               "cell: ozaki / scipy / refined)." if has_refined(res) else
               "``ozaki.linalg.solve_refined`` does not exist in this ozaki: no refined "
               "column.")
    return [("p", f"Tier ``{meta['tier']}``: {len(cases)} matrices, {runs} routines run in "
                  f"ozaki and scipy in {meta['seconds']:.0f} s (ozaki {meta['ozaki']}, scipy "
                  f"{meta['scipy']}, numpy {meta['numpy']}; products "
                  f"{meta['small_products']}, ozaki's other options at their defaults). "
                  + _verdict(res)),
            ("p", "Each case solves ``A x = b`` with ``b = fl(A x0)`` (rounded once from the "
                  "exact product), ``x0`` uniform in [-0.5, 0.5]. ``HPL``: "
                  "``||Ax - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n)``, eps = "
                  "2**-53 (HPL passes below 16); ``bwd``: the normwise backward error "
                  "``||Ax - b||_inf / (||A||_inf ||x||_inf + ||b||_inf)`` in units of u; "
                  "``cw``: the componentwise backward error ``max_i |Ax - b|_i / (|A||x| + "
                  "|b|)_i`` (u); ``fwd``: ``||x - x*||_inf / ||x*||_inf`` (u) against the "
                  "double-double reference ``x*``; residuals exact, rounded once. Each cell "
                  "is ``ozaki / scipy``. " + refined)]


def _table(res):
    head = ["case", "n", "nb", "kappa", "routine", "HPL", "bwd (u)", "cw (u)", "fwd (u)",
            "pivots", "ok"]
    rows = []
    for c in res["cases"]:
        kappa = c["construction"].get("kappa")
        bad = {f["routine"] for f in c["failures"]}
        known = {f["routine"] for f in c["known_issues"]}
        for r in c["routines"]:
            piv = r.get("pivots_differ")
            ok = ("**NO**" if r["routine"] in bad else "known issue"
                  if r["routine"] in known else "yes")
            rows.append([c["name"], str(c["n"]), str(c["block_size"]),
                         "-" if kappa is None else f"{kappa:.2g}", r["routine"],
                         _cell(r, "hpl"), _cell(r, "backward", _u),
                         _cell(r, "componentwise", _u), _cell(r, "forward", _u),
                         "-" if piv is None else "same" if piv == 0 else f"{piv} differ",
                         ok])
    return [("h", "Solutions beside scipy.linalg"),
            ("p", "``kappa``: the 2-norm condition number measured (``svd`` and ``spd`` "
                  "cases; the others are not ill-conditioned by construction: HPL's "
                  "matrices have kappa of order n, the scaled ones are HPL's times powers "
                  "of two). ``pivots``: ozaki's pivot vector against scipy's (``lu``). "
                  "``nb``: ozaki's block size."),
            ("table", "ozaki.linalg / scipy.linalg on the same matrices", head, rows)]


def _hpl_medians(res):
    """The issue's goal: the median of the scaled residual over seeds, per order."""
    by_n: dict = {}
    for c in res["cases"]:
        if c["family"] != "hpl":
            continue
        for r in c["routines"]:
            if r["routine"] == "lu" and "hpl" in r["ozaki"] and "hpl" in r["scipy"]:
                by_n.setdefault(c["n"], []).append((r["ozaki"]["hpl"], r["scipy"]["hpl"]))
    rows = []
    for n, v in sorted(by_n.items()):
        o, s = float(np.median([a for a, _ in v])), float(np.median([b for _, b in v]))
        rows.append([str(n), str(len(v)), _g(o), _g(s), "yes" if o <= s else "no"])
    if not rows:
        return []
    return [("h", "HPL matrices: median over seeds"),
            ("p", "The scaled residual of ``lu_factor``/``lu_solve`` on HPL's matrices, the "
                  "median over the seeds of each order, beside scipy's (issue 28's goal: no "
                  "larger than scipy's; reported, not a failure: the median of three draws "
                  "is itself a draw)."),
            ("table", "HPL's matrices: median scaled residual",
             ["n", "seeds", "ozaki", "scipy", "ozaki <= scipy"], rows)]


def _refined(res):
    rows = [[c["name"], _g(r["refined"].get("hpl")), str(r["refined"].get("iterations", "-")),
             str(r["refined"].get("converged", "-")), _u(r["refined"].get("forward")),
             f"{r['refined'].get('seconds', 0):.2g} / {r['ozaki'].get('seconds', 0):.2g}"]
            for c in res["cases"] for r in c["routines"] if "refined" in r]
    if not rows:
        return []
    return [("h", "The refined solve"),
            ("p", "``ozaki.linalg.solve_refined`` (reduced count of moduli, refined in FP64) "
                  "on the ``solve`` cases: its scaled residual, iterations, whether it "
                  "converged, its forward error (u) and its time beside ``solve``'s (s, on "
                  "a shared machine: not a benchmark)."),
            ("table", "solve_refined", ["case", "HPL", "iterations", "converged", "fwd (u)",
                                        "seconds refined / solve"], rows)]


def _reference(res):
    cases = res["cases"]
    worst = max((c["reference"]["error"] for c in cases), default=0.0)
    steps = [c["reference"]["steps"] for c in cases]
    pivot = [c for c in cases if "pivoted_every_step" in c["construction"]]
    return [("h", "References and constructions"),
            ("p", "The reference ``x*`` is refined from ``x0`` in double-double with exact "
                  "residuals and scipy's LU for the corrections "
                  f"({min(steps, default=0)} to {max(steps, default=0)} steps); its "
                  "estimated relative error (the next correction) is at most "
                  f"{worst / EPS:.2g} u over all cases (limit {REF_LIMIT / EPS:g} u). "
                  f"Condition numbers are within a factor {campaign.KAPPA_FACTOR:g} of their "
                  "targets where a case names one; on the "
                  f"{len(pivot)} cases built to pivot at every step, scipy's pivots are "
                  + ("the built ones (``n - 1`` at every step)."
                     if all(c["construction"]["pivoted_every_step"] for c in pivot) else
                     "**not** all the built ones."))]


def _failures(res):
    fails = res["failures"]
    out = [("h", "Failures")]
    if not fails:
        return out + [("p", "None.")]
    rows = [[f["case"], f["routine"], f["solver"], f["check"], f"{f['measured']:.3g}",
             f"{f['limit']:.3g}", f["note"]] for f in fails]
    return out + [("p", "Reproduce with "
                         "``A, x0, meta = validation.linalg.cases.build(case)``."),
                  ("table", "Failures", ["case", "routine", "solver", "check", "measured",
                                         "limit", "note"], rows)]


def _known_issues(res):
    return render.known_issues(
        res, lambda f: f"{f['routine']} ({f['solver']}) {f['check']}",
        "validation.linalg.campaign.KNOWN_ISSUES", "Checks broken")


def blocks(res, images):
    out = _summary(res) + _table(res) + _hpl_medians(res) + _refined(res) + _reference(res)
    out += _known_issues(res) + _failures(res) + [("h", "Figure")]
    return out + [("image", n, alt) for n, alt in images]


def plot(res, out: Path) -> list[tuple[str, str]]:
    """``linalg_residuals.png``: ozaki's measures against scipy's, one point per routine
    and case, for the scaled residual, the componentwise and the forward error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = (("hpl", "HPL scaled residual", 1.0),
            ("componentwise", "componentwise backward error [u]", EPS),
            ("forward", "forward error [u]", EPS))
    fams = sorted({c["family"] for c in res["cases"]})
    colors = dict(zip(fams, plt.cm.tab10(np.linspace(0, 0.9, len(fams)))))
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6))
    for ax, (key, title, unit) in zip(axes, keys):
        lo = FLOOR[key]
        top = campaign.HPL_THRESHOLD * 2 if key == "hpl" else 10 * lo
        for fam in fams:
            for s, mark in (("ozaki", "o"), ("refined", "x")):
                pts = [(max(r["scipy"][key] / unit, lo), max(r[s][key] / unit, lo))
                       for c in res["cases"] if c["family"] == fam for r in c["routines"]
                       if key in r.get(s, {}) and key in r["scipy"]
                       and math.isfinite(r[s][key]) and math.isfinite(r["scipy"][key])]
                if pts:
                    ax.loglog(*zip(*pts), mark, ms=5, color=colors[fam], alpha=0.8,
                              label=fam if s == "ozaki" else None)
                    top = max(top, *(max(p) for p in pts))
        lims = [lo / 2, top * 2]
        ax.plot(lims, lims, "k-", lw=0.8, label="ozaki = scipy")
        if key != "forward":  # a checked ratio (the forward error is reported only)
            ax.plot(lims, [campaign.RATIO * v for v in lims], "k--", lw=0.8,
                    label=f"{campaign.RATIO:g} x scipy (the check)")
        if key == "hpl":
            ax.axhline(campaign.HPL_THRESHOLD, color="tab:red", lw=0.8, label="HPL's 16")
        ax.set_xlim(lims)
        ax.set_ylim(lims)
        ax.set_xlabel(f"scipy.linalg: {title}", fontsize=8)
        ax.set_ylabel(f"ozaki.linalg: {title}", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"ozaki.linalg against scipy.linalg, tier {res['meta']['tier']}; o: "
                 "ozaki's factorisations, x: solve_refined "
                 f"(values below {FLOOR['hpl']:g} / {FLOOR['componentwise']:g} u drawn there)",
                 fontsize=9)
    fig.tight_layout()
    name = "linalg_residuals.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return [(name, "ozaki.linalg's scaled residual, componentwise and forward errors "
                   "against scipy.linalg's on the same matrices")]

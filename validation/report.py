"""The report: one list of blocks, rendered as Markdown and as reStructuredText.

Errors are in units of ``u = 2**-53``: ``rel`` = max |C - AB| / |AB| (exact zeros
apart), ``nrm`` = max |C - AB| / (|A||B|).
"""

from __future__ import annotations

import numpy as np

from .families import PHIS
from .suite import SCHEMES

ADVERSARIAL = "adversarial"

U = 2.0 ** -53
PEERS = [("int8", 14, "GEMMul8"), ("int8", 15, "GEMMul8"), ("fp8", 10, "GEMMul8"),
         ("fp8", 11, "GEMMul8"), ("fp8", 12, "TME paper")]


def fu(x) -> str:
    """A number in units of u, compactly."""
    if x is None:
        return "-"
    v = float(x) / U
    if v == 0:
        return "0"
    if not np.isfinite(v):
        return "inf"
    if v < 0.01:
        return f"{v:.0e}".replace("e-0", "e-")
    if v < 9.995:
        return f"{v:.2f}"
    if v < 1000:
        return f"{v:.0f}"
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant}e{int(exp)}"


def fx(x) -> str:
    """A plain ratio, compactly."""
    return "-" if x is None else fu(float(x) * U)


def auto_run(case, scheme, mode):
    for r in case["runs"]:
        if r["scheme"] == scheme and r["mode"] == mode and r["requested"] == "auto":
            return r
    return None


def _run(case, scheme, mode, count):
    for r in case["runs"]:
        if r["scheme"] == scheme and r["mode"] == mode and r["requested"] == count:
            return r
    return None


def regular_cases(res):
    """The cases with finite, in-range products (all but the adversarial family)."""
    return [c for c in res["cases"] if c["family"] != ADVERSARIAL]


def _phi_key(c):
    return PHIS.index(c["phi"]) if c["phi"] in PHIS else 99


# -- sections -----------------------------------------------------------------

def engines(res) -> str:
    """The engines the campaign's runs took, per scheme: ``int8 on cpu-onednn, ...``
    (runs recorded before the engine was, in ``cpu-blas``)."""
    seen: dict = {}
    for c in res["cases"]:
        for r in c["runs"]:
            seen.setdefault(r["scheme"], {}).setdefault(r.get("engine", "cpu-blas"), None)
    return ", ".join(f"{s} on {' and '.join(f'``{e}``' for e in seen[s])}"
                     for s in SCHEMES if s in seen)


def _summary(res):
    meta, cases = res["meta"], res["cases"]
    nruns = sum(len(c["runs"]) for c in cases)
    kinds = [c["reference"]["kind"] for c in cases]
    frac = sum(bool(c["reference"]["fraction_checked"]) for c in cases)
    dd = [c["reference"]["dd_vs_exact_max_over_rad"] for c in cases
          if c["reference"]["dd_vs_exact_max_over_rad"] is not None]
    fails, known = res["failures"], res.get("known_issues", [])
    verdict = ("**No failures**: no entry broke its certified bound, every result that ozaki "
               "called certified met its target (componentwise in accurate mode, normwise in "
               "fast mode), every exactly computed entry (exact fallback, overflow guard) was "
               "correctly rounded, and no finite input gave a NaN, an infinity where the exact "
               "value fits or a finite value where it overflows."
               if not fails else f"**{len(fails)} failures** (listed below).")
    if known:
        verdict += (f" {len(known)} runs hit known, reported ozaki issues (listed below; "
                    "they do not count as failures).")
    return [("p", f"Tier ``{meta['tier']}``: {len(cases)} cases, {nruns} ozaki calls checked "
                  f"in {meta['seconds']:.0f} s (ozaki {meta['ozaki']}, moduli tables "
                  f"version {meta['moduli_version']}, numpy {meta['numpy']}; {engines(res)}, "
                  "the default engines (``engine=\"auto\"``); auto in accurate mode also on "
                  "the scheme's own simulated engine, compared bitwise). " + verdict),
            ("p", f"References: {kinds.count('exact')} cases exact (every entry as an exact "
                  f"expansion; {frac - kinds.count('rational')} of them also checked equal to "
                  f"Fractions), {kinds.count('rational')} in rational arithmetic (the "
                  "adversarial inputs, whose terms lie beyond the error-free split), "
                  f"{kinds.count('double-double')} against the double-double GEMM (entries "
                  "near a decision resolved exactly). Where both ran, the double-double GEMM "
                  f"stayed within {max(dd, default=0):.2g} of its error radius.")]


def _auto_counts(res):
    out = [("h", "The count auto chooses, against phi and k"),
           ("p", "Cells are ``accurate / fast``; ``*`` marks an exact fallback (some entries "
                 "recomputed by the exactly rounded dot product). "
                 "Cases of the phi family (``m = n`` from 16 at small k down to 4 at "
                 "k = 131072).")]
    cases = [c for c in res["cases"] if c["family"] == "phi" and not c["params"].get("large")]
    ks = sorted({c["k"] for c in cases})
    labels = [lab for lab in dict.fromkeys(c["phi_label"] for c in sorted(cases, key=_phi_key))]
    for scheme in SCHEMES:
        rows = []
        for lab in labels:
            row = [lab]
            for k in ks:
                cs = [c for c in cases if c["phi_label"] == lab and c["k"] == k]
                cell = ""
                if cs:
                    a, f = auto_run(cs[0], scheme, "accurate"), auto_run(cs[0], scheme, "fast")
                    cell = (f"{a['num_moduli']}{'*' if a['fallback'] != 'none' else ''} / "
                            f"{f['num_moduli']}{'*' if f['fallback'] != 'none' else ''}")
                row.append(cell)
            rows.append(row)
        out.append(("table", f"Scheme {scheme}: auto's count", ["phi"] + [f"k={k}" for k in ks],
                    rows))
    return out


def _auto_vs_native(res):
    out = [("h", "Auto against native, per case"),
           ("p", "Accurate mode unless marked: ``N`` the count chosen, ``GEMMs`` the "
                 "low-precision products it took on the scheme's own unit (FP8: three per "
                 "modulus, plus the bound GEMM), ``err`` its ``rel / nrm``, ``native`` numpy's "
                 "``rel / nrm``, ``bound`` the largest certified bound over ``(|A||B|)_ij`` (u), ``err/bnd`` the largest ratio of the "
                 "measured error to the bound (must stay below 1), ``fb`` entries replaced "
                 "by the exact fallback; ``fast`` the fast mode's count and ``rel / nrm``. "
                 "The adversarial inputs have their own section below.")]
    head = ["case", "k", "N", "GEMMs", "err", "native", "bound", "err/bnd", "fb", "fast"]
    for scheme in SCHEMES:
        rows = []
        for c in regular_cases(res):
            a, f = auto_run(c, scheme, "accurate"), auto_run(c, scheme, "fast")
            nat = c["native"]
            b = a.get("bound") or {}
            rows.append([c["name"], str(c["k"]), str(a["num_moduli"]),
                         str(a.get("unit_gemms", a["gemms"])),
                         f"{fu(a['max_rel'])} / {fu(a['max_nrm'])}",
                         f"{fu(nat['max_rel'])} / {fu(nat['max_nrm'])}",
                         fu(b.get("max_bound_nrm")), fx(b.get("max_err_over_bound")),
                         str(a["fallback_entries"]),
                         f"{f['num_moduli']}{'*' if f['fallback'] != 'none' else ''}: "
                         f"{fu(f['max_rel'])} / {fu(f['max_nrm'])}"])
        out.append(("table", f"Scheme {scheme}: auto against native", head, rows))
    return out


def table_cases(res):
    cs = [c for c in res["cases"] if c["params"].get("table")]
    return sorted(cs, key=_phi_key)


def _vs_moduli(res):
    cases = table_cases(res)
    if not cases:
        return []
    c0 = cases[0]
    out = [("h", "Error against the number of moduli"),
           ("p", f"Shapes ``m = n = {c0['m']}``, ``k = {c0['k']}``; each cell ``rel / nrm`` "
                 "in units of u (the literature's error-versus-moduli tables). ``native`` is "
                 "numpy on the same inputs; ``auto`` is the count auto chooses; ``-`` marks "
                 "counts not run.")]
    for scheme in SCHEMES:
        for mode in ("accurate", "fast"):
            counts = sorted({r["requested"] for c in cases for r in c["runs"]
                             if r["scheme"] == scheme and r["requested"] != "auto"})
            rows = [["native"] + [f"{fu(c['native']['max_rel'])} / {fu(c['native']['max_nrm'])}"
                                  for c in cases]]
            for n in counts:
                cells = []
                for c in cases:
                    r = _run(c, scheme, mode, n)
                    cells.append("-" if r is None else f"{fu(r['max_rel'])} / {fu(r['max_nrm'])}")
                rows.append([str(n)] + cells)
            rows.append(["auto"] + [f"{auto_run(c, scheme, mode)['num_moduli']}: "
                                    f"{fu(auto_run(c, scheme, mode)['max_rel'])} / "
                                    f"{fu(auto_run(c, scheme, mode)['max_nrm'])}" for c in cases])
            out.append(("table", f"Scheme {scheme}, {mode} mode",
                        ["N"] + [f"phi={c['phi_label']}" for c in cases], rows))
    return out


def _peers(res):
    cases = table_cases(res)
    if not cases:
        return []
    out = [("h", "The peers' recommended counts"),
           ("p", "GEMMul8 recommends 14-15 INT8 and 10-11 FP8 moduli; the TME paper uses 12 "
                 "FP8 moduli. Each cell: ``nrm`` error of that count in accurate mode, as a "
                 "multiple of native's ``nrm`` on the same inputs, then the entries it leaves "
                 "uncertified (of " f"{cases[0]['m'] * cases[0]['n']}). The last rows give "
                 "auto's count and the same ratio. Their moduli and scalings differ from "
                 "ozaki's, so the counts compare only roughly.")]
    rows = []
    for scheme, n, who in PEERS:
        cells = []
        for c in cases:
            r = _run(c, scheme, "accurate", n)
            cells.append("-" if r is None else
                         f"{fx(r['max_nrm'] / max(c['native']['max_nrm'], 1e-300))}x, "
                         f"{r['uncertified']}")
        rows.append([f"{who}: {scheme} {n}"] + cells)
    for scheme in SCHEMES:
        cells = []
        for c in cases:
            r = auto_run(c, scheme, "accurate")
            cells.append(f"N={r['num_moduli']}: "
                         f"{fx(r['max_nrm'] / max(c['native']['max_nrm'], 1e-300))}x, "
                         f"{r['uncertified']}")
        rows.append([f"ozaki auto: {scheme}"] + cells)
    out.append(("table", "Peers' counts against native (accurate mode)",
                ["count"] + [f"phi={c['phi_label']}" for c in cases], rows))
    return out


def _k_sweep(res):
    cases = sorted([c for c in res["cases"] if c["params"].get("sweep")], key=lambda c: c["k"])
    if not cases:
        return []
    out = [("h", "Across the exactness limits (phi = 1)"),
           ("p", "``nrm`` error (u) in accurate mode against k: the fp64 scheme blocks k at "
                 "4096, FP8 accumulation at 65536 (exercised on the simulated engine, which "
                 "matched ``cpu-blas`` bitwise). The header gives ``m = n``.")]
    for scheme in SCHEMES:
        counts = sorted({r["requested"] for c in cases for r in c["runs"]
                         if r["scheme"] == scheme and r["requested"] != "auto"})
        rows = [["native"] + [fu(c["native"]["max_nrm"]) for c in cases]]
        for n in counts:
            rows.append([str(n)] + [fu(r["max_nrm"]) if (r := _run(c, scheme, "accurate", n))
                                    else "-" for c in cases])
        rows.append(["auto"] + [f"{auto_run(c, scheme, 'accurate')['num_moduli']}: "
                                f"{fu(auto_run(c, scheme, 'accurate')['max_nrm'])}" for c in cases])
        out.append(("table", f"Scheme {scheme}: nrm against k",
                    ["N"] + [f"k={c['k']} (m={c['m']})" for c in cases], rows))
    return out


def _fallbacks(res):
    rows, fast = [], []
    for c in res["cases"]:
        for scheme in SCHEMES:
            for mode in ("accurate", "fast"):
                a = auto_run(c, scheme, mode)
                if a["fallback_entries"]:
                    nf = a.get("no_fallback", {})
                    rows.append([c["name"], scheme, mode, str(a["num_moduli"]),
                                 f"{a['fallback_entries']} of {c['m'] * c['n']}",
                                 "x".join(map(str, a["fallback_block"])),
                                 f"{fu(nf.get('max_nrm'))} ({nf.get('zero_entries', 0)} zeros)",
                                 fu(a["max_nrm"])])
            f = auto_run(c, scheme, "fast")
            if f["max_err_over_target"] > 1:
                fast.append([c["name"], scheme, str(f["num_moduli"]), f["fallback"],
                             fx(f["max_err_over_target"])])
    out = [("h", "What auto fell back on"),
           ("p", "``fallback=\"exact\"`` (auto's default): the uncertified entries are "
                 "recomputed by the exactly rounded dot product, and each was checked to be "
                 "the correctly rounded exact value. ``emulated`` is the ``nrm`` error the "
                 "uncertified values would have had (``fallback=\"none\"``; exact-zero entries "
                 "counted), ``delivered`` the error after the fallback. ``fallback=\"raise\"`` "
                 "raised in every such case." if rows else "Auto never fell back.")]
    if rows:
        out.append(("table", "Exact fallbacks",
                    ["case", "scheme", "mode", "N", "entries", "block", "emulated",
                     "delivered"], rows))
    out.append(("p", "Fast mode certifies only the normwise target "
                     "``u |AB| + u ||a_i|| ||b_j||``. Cases "
                     "where fast auto's result misses the componentwise target (ratio = max "
                     "error / target), although normwise-certified:" if fast else
                     "Fast auto met the componentwise target in every case."))
    if fast:
        out.append(("table", "Fast mode beyond the componentwise target",
                    ["case", "scheme", "N", "fallback", "ratio"], fast))
    return out


def _adversarial(res):
    cases = [c for c in res["cases"] if c["family"] == ADVERSARIAL]
    if not cases:
        return []
    counts = sorted({r["requested"] for c in cases for r in c["runs"]} - {"auto"})
    out = [("h", "Adversarial inputs"),
           ("p", "Small products built to break certificates and special values, checked in "
                 f"rational arithmetic at the counts {', '.join(map(str, counts))} "
                 "and auto, in both modes, on every scheme: every entry within its "
                 "``info.error_bound``; NaN never; an infinity exactly where the exact value "
                 "rounds beyond the range, with its sign; the entries with "
                 "``(|A||B|)_ij >= 2**1023`` (which the overflow guard must compute) and the "
                 "exact fallback's entries correctly rounded. ``inf`` counts the entries whose "
                 "exact value overflows, ``guard`` those with ``(|A||B|)_ij >= 2**1023``, "
                 "``sub`` the subnormal results; ``native`` is numpy's ``rel`` error and its "
                 "wrong special values (NaN, infinity where the value fits, finite where it "
                 "overflows); ``exact`` the entries ozaki computed exactly in auto "
                 "(``accurate / fast``), with the exact fallback's share in brackets; "
                 "``rel`` the worst ``rel`` of auto over the schemes and both modes "
                 "(entries with the right infinity count as exact).")]
    rows = []
    for c in cases:
        ref, nat = c["reference"], c["native"]
        sp = nat["special"]
        cells = []
        for scheme in SCHEMES:
            a, f = auto_run(c, scheme, "accurate"), auto_run(c, scheme, "fast")
            cells.append(f"{a['exact_entries']} ({a['fallback_entries']}) / "
                         f"{f['exact_entries']} ({f['fallback_entries']})")
        worst = max(auto_run(c, s, m)["max_rel"] for s in SCHEMES for m in ("accurate", "fast"))
        rows.append([c["name"], f"{c['m']}x{c['k']}x{c['n']}", str(ref["overflow_entries"]),
                     str(ref["guard_entries"]), str(ref["subnormal_entries"]),
                     f"{fu(nat['max_rel'])}; {sp['nan']} NaN, {sp['inf_where_finite']} inf, "
                     f"{sp['overflow_wrong']} finite"] + cells + [fu(worst)])
    out.append(("table", "Adversarial inputs (rational reference)",
                ["case", "m x k x n", "inf", "guard", "sub", "native"]
                + [f"exact {s}" for s in SCHEMES] + ["rel"], rows))
    return out


def known_issues(res, where, source: str, what: str = "Runs that broke a check"):
    """The "Known issues" blocks of a campaign: its failures already reported against
    ozaki (``res["known_issues"]``, listed in ``source``), grouped by issue; ``where(f)``
    names the run of failure ``f``. Empty when there are none."""
    known = res.get("known_issues", [])
    if not known:
        return []
    groups: dict = {}
    for f in known:
        groups.setdefault(f["issue"], []).append(f)
    rows = [[issue, str(len(fs)), ", ".join(sorted({f["case"] for f in fs})),
             ", ".join(sorted({where(f) for f in fs}))]
            for issue, fs in groups.items()]
    return [("h", "Known issues"),
            ("p", f"{what} in a way already reported against ozaki "
                  f"(``{source}``); not counted as failures."),
            ("table", "Known issues", ["issue", "runs", "cases", "where"], rows)]


def _known_issues(res):
    return known_issues(res, lambda f: f"{f['scheme']} {f['mode']} N={f['requested']}",
                        "validation.suite.KNOWN_ISSUES")


def _failures(res):
    fails = res["failures"]
    out = [("h", "Failures")]
    if not fails:
        return out + [("p", "None.")]
    rows = [[f["case"], f["scheme"], f["mode"], str(f["requested"]), f["check"],
             str(f["entries"]), str(tuple(f["first"])), f"{f['measured']:.3g}",
             f"{f['limit']:.3g}"] for f in fails]
    return out + [("p", "Reproduce with ``A, B = validation.families.build(case)``."),
                  ("table", "Failures", ["case", "scheme", "mode", "N", "check", "entries",
                                         "first", "measured", "limit"], rows)]


def _figures(images):
    out = [("h", "Figures")]
    for name, alt in images:
        out.append(("image", name, alt))
    return out


def blocks(res, images):
    out = _summary(res)
    for part in (_auto_counts, _auto_vs_native, _vs_moduli, _peers, _k_sweep, _fallbacks,
                 _adversarial, _known_issues, _failures):
        out += part(res)
    return [b for b in out + _figures(images) if b[0] != "table" or b[3]]


# -- rendering ----------------------------------------------------------------

def _md_table(head, rows):
    esc = [[c.replace("|", "\\|") for c in r] for r in [head] + rows]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in esc[1:]]


def rst_table(head, rows, right=()) -> list[str]:
    """Lines of an RST simple table; the columns whose indices are in ``right`` are
    right-aligned (numbers), the others left-aligned."""
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    rule = "  ".join("=" * w for w in widths)

    def line(cells):
        return "  ".join(t.rjust(w) if c in right else t.ljust(w)
                         for c, (t, w) in enumerate(zip(cells, widths))).rstrip()

    return [rule, line(head), rule] + [line(r) for r in rows] + [rule]


def markdown(bl, title="Validation report") -> str:
    lines = [f"# {title}", ""]
    for b in bl:
        if b[0] == "h":
            lines += [f"## {b[1]}", ""]
        elif b[0] == "p":
            lines += [b[1], ""]
        elif b[0] == "table":
            lines += [f"**{b[1]}**", ""] + _md_table(b[2], b[3]) + [""]
        elif b[0] == "image":
            lines += [f"![{b[2]}]({b[1]})", ""]
    return "\n".join(lines)


def rst(bl, image_prefix="") -> str:
    lines = [".. Generated by ``python -m validation``; do not edit.", ""]
    for b in bl:
        if b[0] == "h":
            lines += [b[1], "-" * len(b[1]), ""]
        elif b[0] == "p":
            lines += [b[1], ""]
        elif b[0] == "table":
            body = [[c if c else "-" for c in r] for r in b[3]]
            lines += [f".. rubric:: {b[1]}", ""] + rst_table(b[2], body) + [""]
        elif b[0] == "image":
            lines += [f".. image:: {image_prefix}{b[1]}", f"   :alt: {b[2]}",
                      "   :width: 100%", ""]
    return "\n".join(lines)

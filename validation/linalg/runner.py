"""The linalg campaign's driver: run the cases, write the results, the reports, the figure.

``python -m validation.linalg`` and ``python -m validation --family linalg`` call
:func:`main` (after setting the thread defaults).
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy
from tqdm import tqdm

import ozaki

from .. import outputs
from ..jsonsafe import strict
from ..options import campaign_parser
from . import campaign, cases as families, report

PROG = "python -m validation.linalg"
TITLE = "Linear algebra validation report"


def run(cases, tier: str, emulated: bool = True, progress: bool = True) -> dict:
    """The campaign on ``cases``: the results (JSON-ready, non-finite floats as strings).

    ``emulated``: every product of the factorisations runs the emulation (the small
    ones too: ``ozaki.set_small_products(False)``); ``False`` lets ozaki choose.
    """
    t0 = time.perf_counter()
    results = []
    with tqdm(total=len(cases), unit="case", file=sys.stderr, dynamic_ncols=True,
              disable=not progress) as bar:
        with ozaki.set_small_products(not emulated):  # this thread runs every call
            for c in cases:
                bar.set_description(c.name)
                results.append(campaign.run_case(c))
                bar.update(1)
    return strict({
        "meta": {"tier": tier, "seconds": time.perf_counter() - t0, "ozaki": ozaki.__version__,
                 "numpy": np.__version__, "scipy": scipy.__version__,
                 "python": platform.python_version(), "machine": platform.machine(),
                 "eps": 2.0 ** -53, "small_products": "emulated" if emulated else
                 "ozaki's choice (small ones compensated)",
                 "refined": campaign.refined_solver() is not None},
        "cases": results, "failures": [f for r in results for f in r["failures"]],
        "known_issues": [f for r in results for f in r["known_issues"]]})


def write(res: dict, out: Path, docs: str | None = None) -> None:
    """``linalg_results.json``, the reports and the figure in ``out`` (and ``docs``)."""
    outputs.write(res, out, docs, "linalg", TITLE, PROG, report)


def main(argv=None, prog: str = PROG) -> int:
    ap = campaign_parser(prog, "The linear algebra (ozaki.linalg) validation campaign.",
                         "the CI tier (n <= 256, under a minute)")
    ap.add_argument("--compensated", action="store_true",
                    help="let ozaki compute small products by compensated dot products "
                         "(its default); without it every product runs the emulation")
    args = ap.parse_args(argv)
    cases = families.cases(args.quick)
    if args.case:
        known = {c.name for c in families.quick_cases() + families.full_cases()}
        unknown = set(args.case) - known
        if unknown:
            ap.error(f"unknown case(s): {', '.join(sorted(unknown))} (names as in the "
                     "report, e.g. hpl-n256)")
        cases = [families.find(name) for name in dict.fromkeys(args.case)]
    tier = "selected" if args.case else "quick" if args.quick else "full"
    res = run(cases, tier, emulated=not args.compensated)
    out = Path(args.out)
    write(res, out, args.docs)
    fails, known = res["failures"], res["known_issues"]
    runs = sum(len(c["routines"]) for c in res["cases"])
    print(f"{len(cases)} matrices, {runs} routines: {len(fails)} failures, {len(known)} "
          f"known issues, {res['meta']['seconds']:.0f} s; report in {out}")
    for tag, fs in (("FAIL", fails), ("KNOWN", known)):
        for f in fs[:20]:
            print(f"{tag} {f['check']}: case {f['case']} {f['routine']} ({f['solver']}): "
                  f"{float(f['measured']):.3g} > {float(f['limit']):.3g} {f['note']}")
    return 1 if fails else 0



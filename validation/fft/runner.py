"""The FFT campaign's driver: run the cases, write the results, the reports, the figure.

``python -m validation.fft`` calls :func:`main` (after setting the thread defaults).
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import mpmath
import numpy as np
import scipy
from tqdm import tqdm

import ozaki

from .. import outputs
from ..jsonsafe import strict
from ..options import campaign_parser
from . import campaign, cases as families, report
from .reference import check_long_double


def run(cases, tier: str, progress: bool = True) -> dict:
    """The campaign on ``cases``: the results (JSON-ready, non-finite floats as strings)."""
    bits = check_long_double()
    t0 = time.perf_counter()
    results = []
    with tqdm(total=campaign.reference_check_count() + len(cases), unit="case", file=sys.stderr,
              dynamic_ncols=True, disable=not progress) as bar:
        bar.set_description("reference checks")
        checks = campaign.reference_checks(bar.update)
        for c in cases:
            bar.set_description(c.name)
            results.append(campaign.run_case(c))
            bar.update(1)
    failures = campaign.reference_failures(checks) + [f for r in results for f in r["failures"]]
    failures += campaign.tier_failures(results, tier)
    known = [f for r in results for f in r["known_issues"]]
    return strict({
        "meta": {"tier": tier, "seconds": time.perf_counter() - t0, "ozaki": ozaki.__version__,
                 "numpy": np.__version__, "scipy": scipy.__version__,
                 "mpmath": mpmath.__version__, "python": platform.python_version(),
                 "machine": platform.machine(), "u": 2.0 ** -53, "long_double_bits": bits},
        "reference_checks": checks, "cases": results, "failures": failures,
        "known_issues": known, "r2r": campaign.r2r_summary(results)})


def write(res: dict, out: Path, docs: str | None = None) -> None:
    """``fft_results.json``, the reports and the figure in ``out`` (and ``docs``)."""
    outputs.write(res, out, docs, "fft", "FFT validation report", "python -m validation.fft",
                  report)


def count_line(cases: int, checks: int) -> str:
    """What was run, counted as the progress bar counts it: the checks of the long-double
    reference and the FFT cases."""
    return f"{cases + checks} runs ({cases} FFT cases, {checks} checks of the reference)"


def main(argv=None) -> int:
    ap = campaign_parser("python -m validation.fft", "The FFT accuracy campaign.",
                         "the CI tier (under a minute)")
    args = ap.parse_args(argv)
    cases = families.cases(args.quick)
    if args.case:
        unknown = set(args.case) - {c.name for c in families.full_cases()}
        if unknown:
            ap.error(f"unknown case(s): {', '.join(sorted(unknown))}")
        cases = [families.find(name) for name in dict.fromkeys(args.case)]
    res = run(cases, "selected" if args.case else "quick" if args.quick else "full")
    out = Path(args.out)
    write(res, out, args.docs)
    fails, known = res["failures"], res["known_issues"]
    print(f"{count_line(len(cases), len(res['reference_checks']))}: {len(fails)} failures, "
          f"{len(known)} known issues, {res['meta']['seconds']:.0f} s; report in {out}")
    for tag, fs in (("FAIL", fails), ("KNOWN", known)):
        for f in fs[:20]:
            print(f"{tag} {f['check']}: case {f['case']}: {float(f['measured']):.3g} > "
                  f"{float(f['limit']):.3g} {f['note']}")
    return 1 if fails else 0



"""``python -m validation [--quick] [--out DIR] [--docs DOCS]``: the accuracy campaign.

Writes ``report.md``, ``report.rst``, ``results.json`` and PNG figures to ``--out``;
with ``--docs DOCS`` also ``DOCS/_generated/validation_report.{md,rst}`` and
``DOCS/_generated/validation_*.png`` (the page ``DOCS/validation.rst`` includes them).
Exit status 1 when any check fails (see :mod:`validation.suite`); failures that
match a known, reported ozaki bug (``validation.suite.KNOWN_ISSUES``) are listed
apart and do not set it. The FFT campaign is its own entry, ``python -m validation.fft``
(:mod:`validation.fft`), writing ``fft_*`` files beside these, and so is the linear
algebra campaign, ``python -m validation.linalg`` (:mod:`validation.linalg`, ``linalg_*``
files); ``--family fft`` and ``--family linalg`` run them from here (the other options
are theirs; the default, ``--family gemm``, is this campaign).
"""

from __future__ import annotations

import os

# On shared cores OpenBLAS's spinning threads make small products 40-200 times slower.
# ozaki's results do not depend on threads; the native baseline's small products run
# on one thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from .options import campaign_parser, missing_extra  # noqa: E402

# The campaign needs the test extra (tqdm, matplotlib, ...): where one is missing,
# main() says what to install instead of a bare ModuleNotFoundError (as tme-plot does).
try:
    import numpy as np
    from tqdm import tqdm

    import ozaki

    from . import families, plots, report, suite
except ModuleNotFoundError as _exc:
    if _exc.name is None or _exc.name.partition(".")[0] in ("validation", "ozaki", "fft"):
        raise  # a module of this project itself: a bug, not a missing extra
    _MISSING = _exc
else:
    _MISSING = None


def _clean(x):
    """JSON-safe: numpy scalars to Python, non-finite floats to strings."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else str(x)
    return x


def _num(x):
    """Inverse of _clean for the non-finite strings."""
    return float(x) if isinstance(x, str) and x in ("inf", "-inf", "nan") else x


#: The campaigns ``--family`` selects: this module's (the products) and the subpackages'.
FAMILIES = ("gemm", "fft", "linalg")


def _family(argv) -> tuple[str, list]:
    """``--family``'s value (default ``gemm``) and the other arguments."""
    pre = argparse.ArgumentParser(prog="python -m validation", add_help=False)
    pre.add_argument("--family", default="gemm")
    ns, rest = pre.parse_known_args(argv)
    return ns.family, rest


def _delegate(family: str, argv: list) -> int:
    """Run the ``fft`` or ``linalg`` campaign's own entry on ``argv``."""
    if family == "fft":
        from .fft.__main__ import main as fft_main
        return fft_main(argv)
    from .linalg.__main__ import main as linalg_main
    return linalg_main(argv, prog="python -m validation --family linalg")


def main(argv=None) -> int:
    ap = campaign_parser("python -m validation", __doc__.split("\n")[0],
                         "the CI tier (under 2 minutes)")
    ap.add_argument("--emulated", action="store_true",
                    help="run the emulation on the small products too (num_moduli='auto' "
                         "computes them by compensated dot products otherwise: "
                         "ozaki.set_small_products)")
    ap.add_argument("--family", choices=FAMILIES, default="gemm",
                    help="the campaign: gemm (ozaki's products, the default), fft (as "
                         "python -m validation.fft), linalg (as python -m validation.linalg); "
                         "the other options are that campaign's")
    family, rest = _family(argv)
    if family != "gemm":
        if family not in FAMILIES:
            ap.parse_args(argv)  # exits, naming the families
        return _delegate(family, rest)
    args = ap.parse_args(argv)
    if _MISSING is not None:
        ap.error(missing_extra("python -m validation", _MISSING))
    cases = families.cases(args.quick)
    if args.case:
        cases = [c for c in cases if c.name in args.case]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = []
    with tqdm(total=suite.total_runs(cases), unit="call", file=sys.stderr,
              dynamic_ncols=True) as bar:
        with ozaki.set_small_products(not args.emulated):  # this thread runs every call
            for c in cases:
                bar.set_description(c.name)
                results.append(suite.run_case(c, bar.update))
    failures = [f for r in results for f in r["failures"]]
    known = [f for r in results for f in r["known_issues"]]
    res = _clean({
        "meta": {"tier": "quick" if args.quick else "full", "seconds": time.perf_counter() - t0,
                 "small_products": "emulated" if args.emulated else "compensated",
                 "ozaki": ozaki.__version__, "moduli_version": ozaki.MODULI_VERSION,
                 "numpy": np.__version__, "python": platform.python_version(),
                 "machine": platform.machine(), "u": 2.0 ** -53,
                 "max_moduli": {s: len(ozaki.moduli(s)) for s in suite.SCHEMES},
                 "peers": [{"scheme": s, "num_moduli": n, "source": w}
                           for s, n, w in report.PEERS]},
        "cases": results, "failures": failures, "known_issues": known})
    (out / "results.json").write_text(json.dumps(res, indent=1))
    res = json.loads(json.dumps(res), parse_constant=float)
    _restore(res)
    images = plots.all_plots(res, out)
    bl = report.blocks(res, images)
    (out / "report.md").write_text(report.markdown(bl))
    (out / "report.rst").write_text(report.rst(bl))
    if args.docs:
        gen = Path(args.docs) / "_generated"
        gen.mkdir(parents=True, exist_ok=True)
        docs_images = [(f"validation_{n}", alt) for n, alt in images]
        for n, _ in images:
            shutil.copyfile(out / n, gen / f"validation_{n}")
        dbl = report.blocks(res, docs_images)
        (gen / "validation_report.md").write_text(report.markdown(dbl))
        (gen / "validation_report.rst").write_text(report.rst(dbl, image_prefix="_generated/"))
    print(f"{len(cases)} cases, {sum(len(r['runs']) for r in results)} calls, "
          f"{len(failures)} failures, {len(known)} known issues, "
          f"{time.perf_counter() - t0:.0f} s; report in {out}")
    for tag, fs in (("FAIL", failures), ("KNOWN", known)):
        for f in fs[:20]:
            print(f"{tag} {f['check']}: case {f['case']} {f['scheme']} {f['mode']} "
                  f"N={f['requested']}: {f['entries']} entries, first {tuple(f['first'])}: "
                  f"{f['measured']:.3g} > {f['limit']:.3g} {f['note']}")
    return 1 if failures else 0


def _restore(x):
    """Turn the 'inf'/'nan' strings of the JSON back into floats, in place."""
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        if isinstance(v, (dict, list)):
            _restore(v)
        else:
            x[k] = _num(v)


if __name__ == "__main__":
    sys.exit(main())

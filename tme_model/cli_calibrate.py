"""``tme-calibrate``: measure this machine into a TME profile, and check its predictions.

The tool's parser and its ``calibrate_main``, which :mod:`tme_model.cli` re-exports
(the entry point's name; documented there, :func:`tme_model.cli.calibrate_main`).  The
measuring is :mod:`tme_model.calibration`'s, imported inside the function (it loads
ozaki).
"""

from __future__ import annotations

import argparse
import json
from typing import Sequence

from . import tables
from .cli_common import require_extra
from .profile_file import dump_profile, load_profile
from .specs import TMEError

__all__ = ["calibrate_main"]


def _sizes(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be comma-separated integers, got {text!r}")
    if not vals or min(vals) < 8:
        raise argparse.ArgumentTypeError(f"sizes must be integers >= 8, got {text!r}")
    return vals


def _calibrate_parser(cal) -> argparse.ArgumentParser:
    def listed(sizes) -> str:
        return ",".join(map(str, sizes))

    p = argparse.ArgumentParser(
        prog="tme-calibrate",
        description="Measure this machine (native FP64 GEMM, ozaki engines, STREAM bandwidth, "
                    "ozaki's O(n^2) phases) into a TME profile, shown as device 'local' by "
                    "tme-plot/tme-table --profile FILE.  --validate compares the profile's "
                    "predictions with ozaki.dgemm at held-out sizes (Markdown table).")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="profile to write (default profile.json; with --validate and "
                        "--profile, none)")
    p.add_argument("--sizes", type=_sizes, metavar="N,N",
                   help=f"calibration sizes (default {listed(cal.DEFAULT_SIZES)}; "
                        f"--quick: {listed(cal.QUICK_SIZES)})")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes, one run each, small STREAM arrays: a smoke test, not a "
                        "calibration")
    p.add_argument("--repeats", type=int, metavar="R",
                   help="runs per measurement, summarised by --statistic (default 3; --quick 1)")
    p.add_argument("--statistic", choices=cal.STATISTICS, default="median",
                   help="summary of the repeated runs of each measurement (default median; "
                        "min: the run least disturbed by other processes)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    v = p.add_argument_group("validation")
    v.add_argument("--validate", action="store_true",
                   help="after calibrating (or loading --profile), time ozaki.dgemm at the "
                        "validation sizes and print predicted / measured as Markdown")
    v.add_argument("--profile", metavar="FILE", help="with --validate: use this profile "
                                                      "instead of calibrating")
    v.add_argument("--validate-sizes", type=_sizes, metavar="N,N,N",
                   help=f"default {listed(cal.VALIDATION_SIZES)} "
                        f"(--quick: {listed(cal.QUICK_VALIDATION_SIZES)})")
    v.add_argument("--no-fft", action="store_true",
                   help="no FFT rows (default: fft.fft of 16 x 2**14 along the last axis and "
                        "fft.fft2 of 256 x 256, default and native plans; --quick: tiny ones)")
    v.add_argument("--json", metavar="FILE", help="also write the validation rows as JSON")
    v.add_argument("--rst", metavar="FILE", help="also write them as a reStructuredText table "
                                                 "(with the minima restated, after a calibration)")
    return p


def calibrate_main(argv: Sequence[str] | None = None) -> int:
    """``tme-calibrate``: measure this machine into a profile (:mod:`tme_model.calibration`).

    ``tme-calibrate [-o profile.json] [--sizes 1536,3072] [--quick]`` writes a profile for
    ``--profile FILE``; ``--validate`` then compares its predictions of ``ozaki.dgemm``
    with measured times at held-out sizes.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status (0; usage errors exit with 2).
    """
    from . import calibration as cal

    p = _calibrate_parser(cal)
    a = p.parse_args(argv)
    if a.repeats is not None and a.repeats < 1:
        p.error(f"--repeats must be >= 1, got {a.repeats}")
    if a.profile and not a.validate:
        p.error("--profile is for --validate (calibration writes a profile with -o)")
    if a.profile and a.sizes:
        p.error("--sizes calibrates; with --profile nothing is calibrated")
    repeats = a.repeats or (1 if a.quick else 3)
    progress = not a.no_progress
    if progress:
        require_extra(p, "tqdm")
    vsizes = a.validate_sizes or (cal.QUICK_VALIDATION_SIZES if a.quick else cal.VALIDATION_SIZES)
    how = ""
    fft_cases = () if a.no_fft else (cal.QUICK_FFT_CASES if a.quick else cal.FFT_CASES)
    if a.profile:
        try:
            profile = load_profile(a.profile)
        except TMEError as exc:
            p.error(str(exc))
        rows = cal.validate(profile, vsizes, repeats=repeats, progress=progress, statistic=a.statistic,
                            fft_cases=fft_cases)
        how = "validation timed after the calibration"
    else:
        sizes = a.sizes or (cal.QUICK_SIZES if a.quick else cal.DEFAULT_SIZES)
        opts = dict(repeats=repeats, progress=progress, statistic=a.statistic,
                    sim_sizes=cal.QUICK_SIM_SIZES if a.quick else cal.SIM_SIZES,
                    stream_elements=(1 << 20) if a.quick else (1 << 25))
        if a.validate:
            profile, rows = cal.calibrate_and_validate(sizes, vsizes, fft_cases=fft_cases, **opts)
            how = "calibration and validation runs interleaved"
        else:
            profile = cal.calibrate(sizes, **opts)
        out = a.output or "profile.json"
        dump_profile(profile, out)
        profile = load_profile(out)
        print(tables.profile_summary(profile, out))
    if a.validate:
        from .calibration.probes import loadavg

        c = profile.meta.get("calibration", {})
        print(f"\nPredicted versus measured (profile {profile.path}: calibrated at n = "
              f"{', '.join(map(str, c.get('sizes', []))) or '?'}; {how}; {a.statistic} of {repeats} "
              f"runs; load average before {c.get('loadavg_before')}, now {loadavg()})\n")
        print(tables.validation_markdown(rows))
        if a.json:
            with open(a.json, "w") as fh:
                json.dump(rows, fh, indent=2)
                fh.write("\n")
        if a.rst:
            with open(a.rst, "w") as fh:
                fh.write(tables.validation_rst(rows, cal.restate_minima(rows, profile)) + "\n")
    return 0

"""``python -m validation.fft [--quick] [--out DIR] [--docs DOCS]``: the FFT campaign.

Writes ``fft_report.md``, ``fft_report.rst``, ``fft_results.json`` and
``fft_error_vs_n.png`` to ``--out`` (beside the GEMM campaign's files); with
``--docs DOCS`` also ``DOCS/_generated/validation_fft_report.{md,rst}`` and
``DOCS/_generated/validation_fft_error_vs_n.png`` (included by
``DOCS/validation.rst``). Exit status 1 when any check fails (see
:mod:`validation.fft.campaign`).
"""

from __future__ import annotations

import os

# as in ``python -m validation``: no spinning OpenBLAS threads on shared cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402

# The campaign needs the test extra (mpmath, tqdm, ...): where one is missing, main()
# says what to install instead of a bare ModuleNotFoundError (as tme-plot does).
try:
    from .runner import main
except ModuleNotFoundError as _exc:
    if _exc.name is None or _exc.name.partition(".")[0] in ("validation", "ozaki", "fft"):
        raise  # a module of this project itself: a bug, not a missing extra
    _MISSING = _exc

    def main(argv=None) -> int:
        """Parse the arguments (``--help`` works), then exit naming the missing extra."""
        from ..options import campaign_parser

        prog = "python -m validation.fft"
        ap = campaign_parser(prog, "The FFT accuracy campaign.", "the CI tier (under a minute)")
        ap.parse_args(argv)
        ap.error(f"{_MISSING.name} is needed by {prog} but is not installed ({_MISSING}); "
                 'install the test extra: pip install -e ".[test]" in the repository root, '
                 f"or make test (into .venv). Run {prog} from the repository root: "
                 "validation/ is part of the checkout, not of the installed package.")


if __name__ == "__main__":
    sys.exit(main())

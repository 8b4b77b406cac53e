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
    from ..options import fallback_main
    main = fallback_main(_exc, "python -m validation.fft", "The FFT accuracy campaign.",
                         "the CI tier (under a minute)")


if __name__ == "__main__":
    sys.exit(main())

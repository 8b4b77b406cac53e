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

# as in ``python -m validation``: no spinning OpenMP/OpenBLAS threads on shared cores
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402

from .runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())

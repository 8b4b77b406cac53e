"""``python -m validation.linalg [--quick] [--out DIR] [--docs DOCS] [--case NAME]``.

Writes ``linalg_report.md``, ``linalg_report.rst``, ``linalg_results.json`` and
``linalg_residuals.png`` to ``--out`` (beside the other campaigns' files); with
``--docs DOCS`` also ``DOCS/_generated/validation_linalg_report.{md,rst}`` and
``DOCS/_generated/validation_linalg_residuals.png`` (included by
``DOCS/validation.rst``). Exit status 1 when any check fails (see
:mod:`validation.linalg.campaign`).
"""

from __future__ import annotations

import os

# as in ``python -m validation``: no spinning OpenBLAS threads on shared cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402

# The campaign needs the test extra (tqdm, matplotlib, ...): where one is missing,
# main() says what to install instead of a bare ModuleNotFoundError.
try:
    from .runner import main
except ModuleNotFoundError as _exc:
    from ..options import fallback_main
    main = fallback_main(_exc, "python -m validation.linalg",
                         "The linear algebra validation campaign.",
                         "the CI tier (n <= 256, under a minute)", ("--compensated",))


if __name__ == "__main__":
    sys.exit(main())

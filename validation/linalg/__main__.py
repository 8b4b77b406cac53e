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
    if _exc.name is None or _exc.name.partition(".")[0] in ("validation", "ozaki", "fft"):
        raise  # a module of this project itself: a bug, not a missing extra
    _MISSING = _exc

    def main(argv=None, prog: str = "python -m validation.linalg") -> int:
        """Parse the arguments (``--help`` works), then exit naming the missing extra."""
        from ..options import campaign_parser

        ap = campaign_parser(prog, "The linear algebra validation campaign.",
                             "the CI tier (n <= 256, under a minute)")
        ap.add_argument("--compensated", action="store_true")
        ap.parse_args(argv)
        ap.error(f"{_MISSING.name} is needed by {prog} but is not installed ({_MISSING}); "
                 'install the test extra: pip install -e ".[test]" in the repository root, '
                 f"or make test (into .venv). Run {prog} from the repository root: "
                 "validation/ is part of the checkout, not of the installed package.")


if __name__ == "__main__":
    sys.exit(main())

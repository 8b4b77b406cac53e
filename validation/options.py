"""The command-line options the campaigns share (``python -m validation[.fft]``)."""

from __future__ import annotations

import argparse

__all__ = ["campaign_parser"]


def campaign_parser(prog: str, description: str, quick: str) -> argparse.ArgumentParser:
    """``--quick`` (its help: ``quick``), ``--out``, ``--docs`` and ``--case``."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--out", default="build/validation", metavar="DIR",
                    help="output folder (default: %(default)s, relative to the current "
                         "directory)")
    ap.add_argument("--docs", default=None, metavar="DOCS",
                    help="docs folder to refresh too (e.g. docs; default: none)")
    ap.add_argument("--case", action="append", default=None,
                    help="run only the named case(s) (names as in the report)")
    return ap

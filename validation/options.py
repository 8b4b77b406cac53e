"""The command-line options the campaigns share (``python -m validation[.fft]``)."""

from __future__ import annotations

import argparse
from typing import Callable, Sequence

__all__ = ["campaign_parser", "missing_extra", "fallback_main"]


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


def missing_extra(prog: str, exc: ModuleNotFoundError) -> str:
    """The message for a campaign whose dependency ``exc.name`` is not installed."""
    return (f"{exc.name} is needed by {prog} but is not installed ({exc}); install the "
            'test extra: pip install -e ".[test]" in the repository root, or make test '
            f"(into .venv). Run {prog} from the repository root: validation/ is part of "
            "the checkout, not of the installed package.")


def fallback_main(exc: ModuleNotFoundError, prog: str, description: str, quick: str,
                  flags: Sequence[str] = ()) -> Callable[..., int]:
    """The ``main`` of a campaign that could not import ``exc.name``: it parses the
    arguments (``--help`` works; ``flags``: the campaign's own switches), then exits
    with status 2 naming the extra to install. Re-raises ``exc`` when the missing
    module is this project's own (a bug, not a missing extra)."""
    if exc.name is None or exc.name.partition(".")[0] in ("validation", "ozaki", "fft"):
        raise exc

    def main(argv=None) -> int:
        ap = campaign_parser(prog, description, quick)
        for flag in flags:
            ap.add_argument(flag, action="store_true")
        ap.parse_args(argv)
        ap.error(missing_extra(prog, exc))

    return main

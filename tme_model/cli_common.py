"""What the command-line modules share: the figure formats, the figure's file name and
the usage error for a missing optional dependency.

:mod:`tme_model.cli` (``tme-plot``, ``tme-table``), :mod:`tme_model.cli_cpu` (their
``--cpu``) and :mod:`tme_model.cli_calibrate` (``tme-calibrate``) import it; it imports
none of them.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Iterable

from .extras import MissingExtraError, require

__all__ = ["PLOT_FORMATS", "figure_path", "require_extra"]

#: File extensions ``tme-plot -o`` accepts (matplotlib picks the format from them).
PLOT_FORMATS: tuple[str, ...] = (".png", ".svg", ".pdf")


def require_extra(parser: argparse.ArgumentParser, module: str) -> None:
    """Exit with a usage error naming the extra when an optional dependency is missing.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The tool's parser (its ``error`` exits with status 2).
    module : str
        The module to import (:func:`tme_model.extras.require`).
    """
    try:
        require(module)
    except MissingExtraError as exc:
        parser.error(str(exc))


def figure_path(parser: argparse.ArgumentParser, output: str | None, prefix: str,
                keys: Iterable[str]) -> Path:
    """The file ``tme-plot`` writes: ``output``, or ``<prefix><key>_<key>.png`` in the
    current directory (each key with its runs of characters other than ``a-z0-9.-``
    replaced by ``-``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        Exits with a usage error when ``output`` does not end in one of
        :data:`PLOT_FORMATS`.
    output : str or None
        The ``-o`` argument.
    prefix : str
        Start of the default name (``"tme-"``, ``"tme-cpu-"``).
    keys : iterable of str
        The device keys drawn, for the default name.

    Returns
    -------
    pathlib.Path
    """
    if not output:
        return Path.cwd() / (prefix + "_".join(re.sub(r"[^a-z0-9.-]+", "-", k) for k in keys)
                             + ".png")
    out = Path(output)
    if out.suffix.lower() not in PLOT_FORMATS:
        parser.error(f"output must end in {', '.join(PLOT_FORMATS)}, got {out.name!r}")
    return out

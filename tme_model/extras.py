"""Optional dependencies: what only plotting, the closed forms or calibration need.

``pip install ozaki-emu`` installs the model and its tables; the extras add
matplotlib (``[plot]``: ``tme-plot``), sympy (``[symbolic]``: :mod:`tme_model.symbolic`)
and tqdm (``[calibrate]``: the progress bar of ``tme-calibrate``).  :func:`require`
imports one and, where it is missing, raises :class:`MissingExtraError` naming the
extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "require"]

#: Module -> (the extra that installs it, what needs it).
EXTRAS: dict[str, tuple[str, str]] = {
    "matplotlib": ("plot", "drawing rooflines (tme-plot)"),
    "sympy": ("symbolic", "the closed forms of tme_model.symbolic"),
    "tqdm": ("calibrate", "the progress bar of tme-calibrate (or pass --no-progress)"),
}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says how to install it."""


def require(module: str) -> ModuleType:
    """Import an optional dependency, or explain which extra installs it.

    Parameters
    ----------
    module : str
        A key of :data:`EXTRAS` (a submodule such as ``"matplotlib.pyplot"`` also works).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingExtraError
        If it is not installed.
    """
    top = module.partition(".")[0]
    if top not in EXTRAS:
        raise ValueError(f"module must be one of {', '.join(EXTRAS)}, got {module!r}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra, what = EXTRAS[top]
        raise MissingExtraError(
            f"{top} is needed for {what} but is not installed ({exc}); install it with "
            f"pip install 'ozaki-emu[{extra}]' (or pip install {top})") from None

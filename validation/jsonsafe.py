"""Campaign results as JSON and back: numpy scalars as Python numbers, non-finite floats
as the strings ``"inf"``, ``"-inf"`` and ``"nan"`` (strict JSON has no such numbers)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["strict", "floats"]


def strict(x: Any) -> Any:
    """``x`` made JSON-safe: dict keys as strings, numpy scalars as Python ones,
    non-finite floats as strings (nested dicts, lists and tuples followed)."""
    if isinstance(x, dict):
        return {str(k): strict(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [strict(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else str(float(x))
    return x


def floats(d: dict) -> dict:
    """Inverse of :func:`strict` for the non-finite strings (a ``json`` object hook)."""
    return {k: float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v
            for k, v in d.items()}
